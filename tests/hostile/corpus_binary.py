"""Binary inputs: broken Parquet, Parquet whose email column is not text, and the compressed
or spreadsheet files people pass instead of a CSV. The Parquet files are written with pyarrow,
so their column types are exactly the ones named (polars would pick its own)."""

from __future__ import annotations

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


def _xlsx() -> bytes:
    """The smallest workbook Excel opens (ECMA-376 part 1): one sheet of inline strings."""
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
            "parquet_zero_rows",
            _parquet(pa.array([], pa.string()), rows=0),
            Accept(0),
            "list.parquet",
        ),
    ]


def _packed_cases() -> list[Case]:
    return [
        file_case(
            "gzip_csv", gzip.compress(CSV.encode()), Refuse(r"(?i)gzip|compress"), "list.csv.gz"
        ),
        file_case(
            "zip_csv", _zip({"list.csv": CSV}), Refuse(r"(?i)\bzip|compress|archive"), "list.zip"
        ),
        file_case("xlsx", _xlsx(), Refuse(r"(?i)excel|xlsx|spreadsheet|workbook"), "list.xlsx"),
    ]


BINARY_CASES: tuple[Case, ...] = (*_parquet_cases(), *_packed_cases())
