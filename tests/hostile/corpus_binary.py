"""Binary inputs: broken Parquet, Parquet whose email column is not text, and the compressed
files, archives and workbooks lists arrive as (read), or broken ones of those (refused). The
Parquet files are written with pyarrow, so their column types are exactly the ones named
(polars would pick its own)."""

from __future__ import annotations

import bz2
import gzip
import io
import zipfile

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

from tests.hostile.cases import Accept, Case, Refuse, csv_text, file_case

ADDRESSES = ["ann@gmail.com", "bob@yahoo.com", "cat@outlook.com"]
NAMES = pa.array(["Ann", "Bob", "Cat"])
CSV = csv_text("name,email", tuple(f"N,{a}" for a in ADDRESSES))
# Said of a file that is neither Parquet nor text; the file's own name is taken out first.
NOT_A_LIST = r"(?i)parquet|binary|not (a )?(text|csv)"


def _parquet(email: pa.Array, rows: int = 3) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"name": NAMES.slice(0, rows), "email": email}), sink)
    return sink.getvalue()


def _big_parquet() -> bytes:
    emails = [f"user{i}@gmail.com" for i in range(2_000)]
    sink = io.BytesIO()
    pq.write_table(pa.table({"email": emails}), sink)
    return sink.getvalue()


def _two_emails() -> bytes:
    sink = io.BytesIO()
    table = pa.table([NAMES, pa.array(ADDRESSES), pa.array(ADDRESSES)], ["name", "email", "email"])
    pq.write_table(table, sink)
    return sink.getvalue()


def _feather() -> bytes:
    sink = io.BytesIO()
    feather.write_feather(pa.table({"email": ADDRESSES}), sink)
    return sink.getvalue()


def _zip(members: dict[str, str]) -> bytes:
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return sink.getvalue()


_NS = "http://schemas.openxmlformats.org"
_REL = f"{_NS}/officeDocument/2006/relationships"


def _xlsx(extra: dict[str, str] | None = None) -> bytes:
    """The smallest workbook Excel opens (ECMA-376 part 1): one sheet of inline strings (and
    *extra* parts)."""
    rows = "".join(
        f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>{value}</t></is></c></row>'
        for i, value in enumerate(["email", *ADDRESSES], start=1)
    )
    sheet_type = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    return _zip(
        {
            "[Content_Types].xml": f'<Types xmlns="{_NS}/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/'
            'vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{sheet_type}.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            f'ContentType="{sheet_type}.worksheet+xml"/></Types>',
            "_rels/.rels": f'<Relationships xmlns="{_NS}/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="xl/workbook.xml"/>'
            "</Relationships>",
            "xl/workbook.xml": f'<workbook xmlns="{_NS}/spreadsheetml/2006/main" '
            f'xmlns:r="{_REL}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/>'
            "</sheets></workbook>",
            "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{_NS}/package/2006/'
            f'relationships"><Relationship Id="rId1" Type="{_REL}/worksheet" '
            'Target="worksheets/sheet1.xml"/></Relationships>',
            "xl/worksheets/sheet1.xml": f'<worksheet xmlns="{_NS}/spreadsheetml/2006/main">'
            f"<sheetData>{rows}</sheetData></worksheet>",
            **(extra or {}),
        }
    )


def _parquet_cases() -> list[Case]:
    big = _big_parquet()
    good = _parquet(pa.array(ADDRESSES))
    kept = Accept(3, tuple(ADDRESSES))
    return [
        file_case(
            "parquet_truncated", big[: len(big) // 2], Refuse(r"(?i)parquet"), "list.parquet"
        ),
        file_case("parquet_zero_bytes", b"", Refuse(r"(?i)empty"), "list.parquet"),
        file_case("parquet_wrong_magic", b"PARX" + good[4:], Refuse(NOT_A_LIST), "list.parquet"),
        file_case("arrow_file_named_parquet", _feather(), Refuse(NOT_A_LIST), "list.parquet"),
        file_case("parquet_email_int", _parquet(pa.array([1, 2, 3])), Accept(3), "list.parquet"),
        file_case(
            "parquet_email_binary",
            _parquet(pa.array([a.encode() for a in ADDRESSES], pa.binary())),
            kept,
            "list.parquet",
        ),
        file_case(
            "parquet_email_binary_not_utf8",
            _parquet(pa.array([b"\xffann@gmail.com", b"bob@yahoo.com", b"cat@outlook.com"])),
            Accept(3, tuple(ADDRESSES[1:])),
            "list.parquet",
        ),
        file_case(
            "parquet_email_dictionary",
            _parquet(pa.array(ADDRESSES).dictionary_encode()),
            kept,
            "list.parquet",
        ),
        file_case("parquet_email_null_only", _parquet(pa.nulls(3)), Accept(3), "list.parquet"),
        file_case(
            "parquet_email_list",
            _parquet(pa.array([[a] for a in ADDRESSES])),
            Refuse(r"(?i)email.*\blist\b|\blist\b.*email"),
            "list.parquet",
        ),
        file_case(
            "parquet_email_struct",
            _parquet(pa.array([{"local": a.split("@")[0], "domain": "x"} for a in ADDRESSES])),
            Refuse(r"(?i)email.*\bstruct|\bstruct.*email"),
            "list.parquet",
        ),
        file_case(
            "parquet_two_email_columns",
            _two_emails(),
            Refuse(r"(?i)more than one column named 'email'.*rename"),
            "list.parquet",
        ),
        file_case(
            "parquet_zero_rows",
            _parquet(pa.array([], pa.string()), rows=0),
            Accept(0),
            "list.parquet",
        ),
    ]


# Mailchimp's export: a zip of one CSV per audience state, with their own extra columns.
_MAILCHIMP = {
    "subscribed_members_export_1a2b.csv": csv_text(
        "Email Address,First Name,OPTIN_TIME", ("ann@gmail.com,Ann,2024-01-02",)
    ),
    "unsubscribed_members_export_1a2b.csv": csv_text(
        "Email Address,First Name,UNSUB_TIME,UNSUB_REASON",
        ("bob@yahoo.com,Bob,2024-03-04,NORMAL", ",,,"),
    ),
    "cleaned_members_export_1a2b.csv": csv_text(
        "Email Address,First Name,CLEAN_TIME", ("cat@outlook.com,Cat,2024-05-06",)
    ),
    "__MACOSX/._subscribed_members_export_1a2b.csv": "\x00\x05\x16\x07",
}


# 20 MiB of one byte after a header: a few kB packed. The default limits refuse it once
# 16 MiB have come out (read.max_unpack_ratio), and say so without blaming the file.
_BOMB = "email\n" + "0" * (20 << 20)
BOMB = r"(?i)^(?!.*complete).*expands beyond the limit.*read\.max_unpack_ratio"


def _bomb_cases() -> list[Case]:
    data = _BOMB.encode()
    return [
        file_case("gzip_bomb", gzip.compress(data), Refuse(BOMB), "list.csv.gz"),
        file_case("bzip2_bomb", bz2.compress(data), Refuse(BOMB), "list.csv.bz2"),
        file_case("zstd_bomb", pa.compress(data, "zstd", asbytes=True), Refuse(BOMB), "l.zst"),
        file_case("zip_bomb", _zip({"list.csv": _BOMB}), Refuse(BOMB), "list.zip"),
        file_case("xlsx_bomb", _xlsx({"xl/media/pad.bin": _BOMB}), Refuse(BOMB), "list.xlsx"),
    ]


def _packed_cases() -> list[Case]:
    packed = Accept(3, tuple(ADDRESSES))
    return [
        file_case("gzip_csv", gzip.compress(CSV.encode()), packed, "list.csv.gz"),
        file_case("bzip2_csv", bz2.compress(CSV.encode()), packed, "list.csv.bz2"),
        file_case("zstd_csv", pa.compress(CSV.encode(), "zstd", asbytes=True), packed, "l.zst"),
        file_case("zip_csv", _zip({"list.csv": CSV}), packed, "list.zip"),
        file_case(
            "zip_mailchimp",
            _zip(_MAILCHIMP),
            Accept(4, tuple(ADDRESSES), ("NORMAL", "2024-05-06"), rejected=("empty_row",)),
            "export.zip",
        ),
        file_case(
            "zip_one_member",
            _zip(_MAILCHIMP),
            Accept(2, ("bob@yahoo.com",), rejected=("empty_row",)),
            "export.zip",
            "--member",
            "unsubscribed_members_export_1a2b.csv",
        ),
        file_case("xlsx", _xlsx(), packed, "list.xlsx"),
        file_case(
            "gzip_truncated", gzip.compress(CSV.encode())[:-12], Refuse(r"(?i)gzip|compl"), "l.gz"
        ),
        file_case(
            "zip_without_a_csv",
            _zip({"readme.pdf": "%PDF-1.4"}),
            Refuse(r"(?i)no CSV.*readme\.pdf"),
            "list.zip",
        ),
        file_case(
            "zip_member_missing",
            _zip(_MAILCHIMP),
            Refuse(r"(?i)no member 'nope\.csv'.*subscribed_members"),
            "export.zip",
            "--member",
            "nope.csv",
        ),
        file_case(
            "xlsx_sheet_missing",
            _xlsx(),
            Refuse(r"(?i)no sheet 'Nope'.*'Sheet1'"),
            "list.xlsx",
            "--sheet",
            "Nope",
        ),
    ]


BINARY_CASES: tuple[Case, ...] = (*_parquet_cases(), *_packed_cases(), *_bomb_cases())
