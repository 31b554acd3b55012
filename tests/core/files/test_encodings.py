"""National encodings, as Excel writes a "CSV" on a Japanese (cp932) or Russian (cp1251,
``;``-separated) Windows: detected, read and written back without mojibake in every output
format; a file whose code page cannot be told is refused, naming the candidates and
``--encoding``, which (like the ``input.encoding`` setting and the Python API's keyword) says it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import openpyxl
import polars as pl
import pytest

from pipeline import clean as clean_api
from pipeline.cli import main
from pipeline.core.errors import InputError
from pipeline.core.files.encodings import candidates, detect, non_ascii_lines
from pipeline.core.files.utf8 import first_bad_utf8_in

JAPANESE = {
    "header": ["氏名", "フリガナ", "メールアドレス", "会社名", "部署"],
    "rows": [
        ["山田 太郎", "ヤマダ タロウ", "taro.yamada@example.co.jp", "株式会社サンプル", "営業部"],
        ["佐藤 花子", "サトウ ハナコ", "hanako@example.jp", "東京商事株式会社", "総務部"],
        ["鈴木 一郎", "スズキ イチロウ", "ichiro@example.ne.jp", "大阪物産", "開発部"],
        ["高橋 美咲", "タカハシ ミサキ", "misaki@example.com", "株式会社サンプル", "人事部"],
    ],
}
RUSSIAN = {
    "header": ["Фамилия", "Имя", "Отчество", "Электронная почта", "Город"],
    "rows": [
        ["Иванов", "Пётр", "Сергеевич", "petr.ivanov@mail.ru", "Москва"],
        ["Смирнова", "Ольга", "Андреевна", "olga@yandex.ru", "Санкт-Петербург"],
        ["Кузнецов", "Алексей", "Юрьевич", "a.kuznetsov@example.ru", "Новосибирск"],
        ["Фёдорова", "Юлия", "Игоревна", "yulia@example.com", "Екатеринбург"],
    ],
}


def excel_csv(table: dict[str, list], encoding: str, delimiter: str) -> bytes:
    """A sheet saved as "CSV" by Excel on Windows: the ANSI code page, CRLF, quotes only where
    needed, no BOM; Russian Windows' list separator is ``;``."""
    lines = [delimiter.join(row) for row in [table["header"], *table["rows"]]]
    return ("\r\n".join(lines) + "\r\n").encode(encoding)


def run(tmp: Path, source: Path, output: str, *extra: str) -> int:
    args = ["clean", str(source), "-o", str(tmp / output), "--offline", "--quiet"]
    return main([*args, "--cache-dir", str(tmp / "cache"), *extra])


def originals(path: Path, columns: int) -> list[list[str]]:
    """The output's first *columns* columns, header first, whatever its format."""
    if path.suffix == ".xlsx":
        book = openpyxl.load_workbook(path, read_only=True)
        rows = [[str(v) for v in row[:columns]] for row in book.active.iter_rows(values_only=True)]
        book.close()
        return rows
    frame = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)
    frame = frame.select(frame.columns[:columns])
    return [frame.columns, *[list(row) for row in frame.rows()]]


@pytest.mark.parametrize(
    ("table", "encoding", "delimiter"), [(JAPANESE, "cp932", ","), (RUSSIAN, "cp1251", ";")]
)
@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".xlsx"])
def test_national_excel_csvs_come_back_as_written(
    tmp_path: Path, table: dict[str, list], encoding: str, delimiter: str, suffix: str
) -> None:
    source = tmp_path / "export.csv"
    source.write_bytes(excel_csv(table, encoding, delimiter))
    assert run(tmp_path, source, f"out{suffix}") == 0
    expected = [table["header"], *table["rows"]]
    assert originals(tmp_path / f"out{suffix}", len(table["header"])) == expected
    summary = json.loads((tmp_path / "out.summary.json").read_text(encoding="utf-8"))
    assert (summary["encoding"], summary["delimiter"]) == (encoding, delimiter)
    assert summary["email_column"] == table["header"][2 if encoding == "cp932" else 3]
    assert summary["rows_out"] == len(table["rows"])


def test_utf8_is_never_in_doubt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "utf8.csv"
    source.write_bytes(excel_csv(JAPANESE, "utf-8", ","))
    assert run(tmp_path, source, "out.csv") == 0
    assert originals(tmp_path / "out.csv", 5)[1] == JAPANESE["rows"][0]
    assert capsys.readouterr().err == ""


# One Turkish name in Windows-1254: too little text to tell 1254 from 1250 or 1257, which spell
# its ş as ţ and ž (a Romanian or an Estonian name would be spelled so).
SHORT_TURKISH = "Ad,E-posta\r\nAyşe,ayse@example.com.tr\r\n"


def test_an_unsure_file_is_refused_naming_the_candidates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "liste.csv"
    source.write_bytes(SHORT_TURKISH.encode("cp1254"))
    assert run(tmp_path, source, "out.csv") == 2
    error = capsys.readouterr().err
    assert "Cannot tell the encoding" in error and "--encoding" in error
    assert "cp1254: 'Ayşe'" in error and "cp1250: 'Ayţe'" in error
    assert not (tmp_path / "out.csv").exists()
    assert run(tmp_path, source, "out.csv", "--encoding", "windows-1254") == 0
    assert originals(tmp_path / "out.csv", 1)[1:] == [["Ayşe"]]


def test_a_wrong_encoding_is_refused_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "list.csv"
    source.write_bytes("Name,Email\r\nRené,rene@example.fr\r\n".encode("cp1252") + b"x\x98,y\r\n")
    assert run(tmp_path, source, "out.csv", "--encoding", "cp1251") == 2
    assert "0x98 at offset" in capsys.readouterr().err  # 0x98 is no character of cp1251
    assert run(tmp_path, source, "out.csv", "--encoding", "klingon") == 2
    assert "'klingon' is not an encoding" in capsys.readouterr().err


def test_the_setting_and_the_python_api_say_it_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "liste.csv"
    source.write_bytes(SHORT_TURKISH.encode("cp1254"))
    with pytest.raises(InputError, match="Cannot tell the encoding"):
        clean_api(source, offline=True, cache_dir=tmp_path)
    result = clean_api(source, offline=True, cache_dir=tmp_path, encoding="cp1254")
    assert result.frame.get_column("Ad").to_list() == ["Ayşe"]
    monkeypatch.setenv("LISTCLEAN_INPUT_ENCODING", "cp1254")
    assert run(tmp_path, source, "out.csv") == 0


NAMES = {
    "cp1252": ["Müller", "Schäfer", "Jürgen", "Weiß", "François", "Renée", "Köln", "Zürich"],
    "cp1250": ["Łukasz", "Małgorzata", "Wiśniewska", "Wójcik", "Kraków", "Łódź", "Gdańsk"],
    "cp1253": ["Γιώργος", "Μαρία", "Παπαδόπουλος", "Οικονόμου", "Αθήνα", "Θεσσαλονίκη"],
    "cp1254": ["Şükrü", "Çağlar", "Gülşen", "Öztürk", "Yılmaz", "İstanbul"],  # noqa: RUF001
    "cp1257": ["Žydrūnas", "Rūta", "Šarūnas", "Petrauskienė", "Klaipėda", "Šiauliai"],
    "cp936": ["王伟", "李娜", "张敏", "北京科技有限公司", "上海贸易", "广州"],
    "cp949": ["김민준", "이서연", "박지훈", "삼성", "서울", "부산"],
    "cp1255": ["דוד", "שרה", "יוסף", "כהן", "ירושלים", "חיפה"],
}


@pytest.mark.parametrize("encoding", list(NAMES))
def test_the_code_pages_excel_writes_are_told_apart(encoding: str) -> None:
    pick = random.Random(encoding).choice
    rows = [f"{pick(NAMES[encoding])} {pick(NAMES[encoding])},u{i}@example.com" for i in range(40)]
    raw = "\r\n".join(["name,email", *rows]).encode(encoding)
    assert detect(non_ascii_lines([raw]), 0.05, "list.csv") == encoding
    ranked = candidates(non_ascii_lines([raw]))
    assert ranked[0].encoding == encoding and ranked[0].score - ranked[1].score >= 0.05


def _python_first_bad(data: bytes) -> int | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


# Text of every width (1-4 bytes), the bytes UTF-8 refuses (a stray continuation byte, an
# overlong form, a surrogate, past U+10FFFF, a lead byte with nothing after it), and ASCII.
_PIECES = [
    b"john@example.com,",
    "Müller,".encode(),
    "山田 太郎,".encode(),
    "😀\n".encode(),
    b"\x80",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
]


def test_the_first_bad_utf8_byte_is_found_wherever_the_chunks_cut() -> None:
    """Arrow's validation and the cut characters carried between chunks find the byte
    Python's own decoder finds, on texts cut at every kind of place."""
    rng = random.Random(7)
    for _ in range(400):
        good = rng.random() < 0.5
        pieces = _PIECES[:4] if good else _PIECES
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        size = rng.randint(1, 9)
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert first_bad_utf8_in(chunks) == _python_first_bad(data), (data, size)
    assert first_bad_utf8_in([]) is None
    assert first_bad_utf8_in([b"ab", "é".encode()[:1]]) == 2  # the file ends inside a character
