"""How often the encoding of a non-UTF-8 list is found, on lists the detector was not tuned on.

    python bench/bench_encodings.py [--rows 1 3 10 30]

Each language has a few dozen contact-list lines of its own (a name, an address, a city, a
note), written for this bench and kept apart from the tests' examples. For each language and
list size, lists are drawn from those lines (every rotation of the pool), encoded in the code
page Excel writes for that language, and handed to the detector as a run would
(:func:`~pipeline.core.files.encodings.non_ascii_lines`, then
:func:`~pipeline.core.files.encodings.detect` with the default margin). A result is *right*
when the decoded text equals the original (code pages that spell it alike count as right),
*refused* when the detector says it is unsure (the user then gives ``--encoding``), and
*wrong* otherwise: the one outcome that writes mojibake. Prints a Markdown table.
"""

# ruff: noqa: RUF001  (the lists are in their own alphabets)
from __future__ import annotations

import argparse
from collections import Counter

from pipeline.core.errors import InputError
from pipeline.core.files.encodings import DEFAULT_MARGIN, detect, non_ascii_lines

# language: (code page, lines); the lines are "name;email;city;note".
LISTS: dict[str, tuple[str, list[str]]] = {
    "Spanish": (
        "cp1252",
        [
            "Begoña Ibáñez;begona@correo.es;Logroño;cliente desde el año pasado",
            "Ramón Pérez;ramon.p@ejemplo.es;Cádiz;pidió información",
            "Inés Gutiérrez;ines@ejemplo.es;Córdoba;baja temporal",
            "Jesús Núñez;jnunez@ejemplo.es;Almería;renovación pendiente",
            "Ángela Martín;angela@ejemplo.es;León;boletín mensual",
            "Íñigo Zubizarreta;inigo@ejemplo.es;Bilbao;suscripción añadida",
        ],
    ),
    "French": (
        "cp1252",
        [
            "Hélène Lefèvre;helene@exemple.fr;Besançon;abonnée à la lettre",
            "François Dupré;fdupre@exemple.fr;Orléans;relancé en février",
            "Gaëlle Bérénger;gaelle@exemple.fr;Nîmes;déménagée",
            "Jérôme Côté;jerome@exemple.fr;Évreux;intéressé par l'offre",
            "Maïté Œuvray;maite@exemple.fr;Sète;préfère le téléphone",
        ],
    ),
    "German": (
        "cp1252",
        [
            "Jürgen Weiß;juergen@beispiel.de;Köln;Rückruf erwünscht",
            "Käthe Müller;kaethe@beispiel.de;Nürnberg;Großkundin",
            "Björn Schäfer;bjoern@beispiel.de;Lübeck;Anfrage übermittelt",
            "Süßmann Özdemir;sozdemir@beispiel.de;Düsseldorf;Bestätigung fehlt",
        ],
    ),
    "Polish": (
        "cp1250",
        [
            "Grzegorz Brzęczyszczykiewicz;grzegorz@przyklad.pl;Łódź;klient hurtowy",
            "Małgorzata Żółkiewska;malgosia@przyklad.pl;Wrocław;prośba o kontakt",
            "Józef Ślusarczyk;jozef@przyklad.pl;Gdańsk;zniżka świąteczna",
            "Agnieszka Ćwiklińska;aga@przyklad.pl;Kraków;nowy adres",
            "Paweł Wąsowicz;pawel@przyklad.pl;Białystok;rezygnacja",
        ],
    ),
    "Czech": (
        "cp1250",
        [
            "Jiří Dvořák;jiri@priklad.cz;Plzeň;stálý zákazník",
            "Květa Šťastná;kveta@priklad.cz;Ústí nad Labem;žádost o slevu",
            "Přemysl Čermák;premysl@priklad.cz;České Budějovice;odhlášen",
            "Zdeňka Růžičková;zdenka@priklad.cz;Brno;nová objednávka",
        ],
    ),
    "Hungarian": (
        "cp1250",
        [
            "Szőke Gábor;gabor@pelda.hu;Győr;törzsvásárló",
            "Kovács Enikő;eniko@pelda.hu;Pécs;hírlevél leiratkozás",
            "Tóth Ödön;odon@pelda.hu;Székesfehérvár;új cím",
            "Nagy Réka;reka@pelda.hu;Debrecen;ügyfélszolgálat kérte",
        ],
    ),
    "Russian": (
        "cp1251",
        [
            "Екатерина Смирнова;katya@primer.ru;Екатеринбург;постоянный клиент",
            "Дмитрий Кузнецов;dima@primer.ru;Новосибирск;просил перезвонить",
            "Ольга Соколова;olga@primer.ru;Самара;отписалась от рассылки",
            "Алексей Попов;alexey@primer.ru;Казань;новый адрес доставки",
            "Наталья Волкова;natalia@primer.ru;Ярославль;скидка на заказ",
        ],
    ),
    "Ukrainian": (
        "cp1251",
        [
            "Олена Ковальчук;olena@pryklad.ua;Житомир;постійна клієнтка",
            "Андрій Шевченко;andriy@pryklad.ua;Львів;їхав у відпустку",
            "Ірина Бондаренко;iryna@pryklad.ua;Чернігів;нова адреса",
            "Юрій Ткаченко;yuriy@pryklad.ua;Івано-Франківськ;знижка",
        ],
    ),
    "Greek": (
        "cp1253",
        [
            "Γιώργος Παπαδόπουλος;giorgos@paradeigma.gr;Θεσσαλονίκη;τακτικός πελάτης",
            "Ελένη Κωνσταντίνου;eleni@paradeigma.gr;Ηράκλειο;ζήτησε επικοινωνία",
            "Νίκος Αθανασίου;nikos@paradeigma.gr;Πάτρα;νέα διεύθυνση",
            "Σοφία Δημητρίου;sofia@paradeigma.gr;Λάρισα;διαγραφή από λίστα",
        ],
    ),
    "Turkish": (
        "cp1254",
        [
            "Ayşegül Yılmaz;aysegul@ornek.com.tr;İzmir;sadık müşteri",
            "Çağlar Öztürk;caglar@ornek.com.tr;Eskişehir;geri arama istedi",
            "Gökhan Şahin;gokhan@ornek.com.tr;Muğla;yeni adres",
            "Zeynep Kılıç;zeynep@ornek.com.tr;Diyarbakır;bültenden çıktı",
        ],
    ),
    "Hebrew": (
        "cp1255",
        [
            "יוסף כהן;yosef@dugma.co.il;ירושלים;לקוח קבוע",
            "מרים לוי;miriam@dugma.co.il;חיפה;ביקשה שיחה חוזרת",
            "דוד מזרחי;david@dugma.co.il;באר שבע;כתובת חדשה",
            "שרה פרץ;sara@dugma.co.il;תל אביב;הוסרה מהרשימה",
        ],
    ),
    "Arabic": (
        "cp1256",
        [
            "محمد عبد الله;mohammed@mithal.sa;الرياض;عميل دائم",
            "فاطمة الزهراء;fatima@mithal.sa;جدة;طلبت الاتصال",
            "أحمد حسن;ahmed@mithal.sa;الدمام;عنوان جديد",
            "ليلى يوسف;layla@mithal.sa;مكة;ألغت الاشتراك",
        ],
    ),
    "Lithuanian": (
        "cp1257",
        [
            "Žydrūnas Petrauskas;zydrunas@pavyzdys.lt;Šiauliai;nuolatinis klientas",
            "Rūta Kazlauskienė;ruta@pavyzdys.lt;Panevėžys;prašė paskambinti",
            "Vytautas Čiurlionis;vytas@pavyzdys.lt;Klaipėda;naujas adresas",
            "Aušra Jankauskaitė;ausra@pavyzdys.lt;Kaunas;atsisakė naujienlaiškio",
        ],
    ),
    "Japanese": (
        "cp932",
        [
            "山田太郎;yamada@rei.jp;東京都新宿区;常連のお客様",
            "佐藤花子;sato@rei.jp;大阪市北区;折り返し電話希望",
            "鈴木一郎;suzuki@rei.jp;名古屋市;住所変更あり",
            "高橋美咲;takahashi@rei.jp;福岡市博多区;配信停止",
        ],
    ),
    "Chinese (simplified)": (
        "gbk",
        [
            "王小明;wang@lizi.cn;北京市朝阳区;老客户",
            "李晓红;li@lizi.cn;上海市浦东新区;要求回电",
            "张伟;zhang@lizi.cn;广州市天河区;新地址",
            "刘芳;liu@lizi.cn;成都市;取消订阅",
        ],
    ),
    "Chinese (traditional)": (
        "big5",
        [
            "陳志明;chen@lizi.tw;台北市大安區;老客戶",
            "林淑芬;lin@lizi.tw;高雄市;要求回電",
            "黃建國;huang@lizi.tw;台中市西屯區;新地址",
            "吳美玲;wu@lizi.tw;台南市;取消訂閱",
        ],
    ),
    "Korean": (
        "cp949",
        [
            "김민준;minjun@yeshi.kr;서울특별시 강남구;단골 고객",
            "이서연;seoyeon@yeshi.kr;부산광역시;전화 요청",
            "박지호;jiho@yeshi.kr;인천광역시;새 주소",
            "최유나;yuna@yeshi.kr;대구광역시;구독 취소",
        ],
    ),
}


def _one(lines: list[str], encoding: str) -> str:
    text = "name;email;city;note\r\n" + "".join(line + "\r\n" for line in lines)
    data = text.encode(encoding)
    sample = non_ascii_lines([data])
    try:
        found = detect(sample, DEFAULT_MARGIN, "the list")
    except InputError:
        return "refused"
    return "right" if data.decode(found, errors="replace") == text else "wrong"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 3, 10, 30])
    args = parser.parse_args()
    total: Counter[str] = Counter()
    print("| language | code page | " + " | ".join(f"{n} rows" for n in args.rows) + " |")
    print("|---|---|" + "---|" * len(args.rows))
    for language, (encoding, pool) in LISTS.items():
        cells = []
        for rows in args.rows:
            outcomes: Counter[str] = Counter()
            for start in range(len(pool)):
                lines = [pool[(start + i) % len(pool)] for i in range(rows)]
                outcomes[_one(lines, encoding)] += 1
            total.update(outcomes)
            cells.append(f"{outcomes['right']}/{sum(outcomes.values())}" + (
                f" ({outcomes['refused']} refused, {outcomes['wrong']} wrong)"
                if outcomes["refused"] or outcomes["wrong"] else ""
            ))  # fmt: skip
        print(f"| {language} | {encoding} | " + " | ".join(cells) + " |")
    print(f"\nall: {total['right']} right, {total['refused']} refused, {total['wrong']} wrong")


if __name__ == "__main__":
    main()
