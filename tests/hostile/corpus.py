"""The hostile corpus: CSV text as people and programs really export it.

Every case is built at run time into its own directory. The record counts are those of the
lists the files are made from (a record may span lines inside quotes; a blank line is a record
that goes to the rejects as ``empty_row``, as docs/lists.md says), never what some CSV reader
makes of the bytes.
Binary inputs are in :mod:`.corpus_binary`, path and stream mistakes in :mod:`.corpus_paths`.
"""

from __future__ import annotations

from tests.hostile.cases import Accept, Case, Refuse, csv_text, file_case
from tests.hostile.corpus_binary import BINARY_CASES
from tests.hostile.corpus_paths import PATH_CASES

HEADER = "name,email"
GOOD = ("Ann,ann@gmail.com", "Bob,bob@yahoo.com", "Cat,cat@outlook.com")
GOOD_KEPT = ("ann@gmail.com", "bob@yahoo.com", "cat@outlook.com")
HUGE = "x" * 200_000  # over csv.field_size_limit() (131,072) and polars' defaults alike


def _utf8(header: str, records: tuple[str, ...], end: str = "\n") -> bytes:
    return csv_text(header, records, end).encode()


def _ok(
    records: tuple[str, ...],
    *kept: str,
    cells: tuple[str, ...] = (),
    rejected: tuple[str, ...] | None = None,
) -> Accept:
    return Accept(len(records), kept or GOOD_KEPT, cells, rejected=rejected)


def _encodings() -> list[Case]:
    names = ("Zoë €uro", "ann@gmail.com")
    text = csv_text(HEADER, (",".join(names), "Bob,bob@yahoo.com"))
    tab = text.replace(",", "\t")  # Excel's "Unicode Text" is UTF-16 with tabs
    utf16 = Accept(2, ("ann@gmail.com", "bob@yahoo.com"), ("Zoë €uro",))
    legacy = Accept(2, ("ann@gmail.com", "bob@yahoo.com"), ("Zoë €uro",), r"UTF-8")
    latin1 = csv_text(HEADER, ("Åse Ø,ann@gmail.com", "Bob,bob@yahoo.com"))
    mixed = "José,jose@gmail.com\n".encode() + "Zoë,zoe@gmail.com\n".encode("cp1252")
    return [
        file_case("utf8_plain", text.encode(), Accept(2, names[1:], names[:1])),
        file_case("utf8_bom", b"\xef\xbb\xbf" + text.encode(), Accept(2, names[1:], names[:1])),
        file_case("cp1252", text.encode("cp1252"), legacy),
        file_case(
            "latin1",
            latin1.encode("latin-1"),
            Accept(2, ("ann@gmail.com",), ("Åse Ø",), r"UTF-8"),
        ),
        file_case("utf16le_bom", b"\xff\xfe" + tab.encode("utf-16-le"), utf16),
        file_case("utf16be_bom", b"\xfe\xff" + tab.encode("utf-16-be"), utf16),
        file_case("utf16le_no_bom", tab.encode("utf-16-le"), utf16),
        file_case("utf16be_no_bom", tab.encode("utf-16-be"), utf16),
        # 0x8D is undefined in cp1252, so only the Latin-1 fallback can read this file.
        file_case(
            "latin1_beyond_cp1252",
            latin1.replace("Åse", "Åse\x8d").encode("latin-1"),
            Accept(2, ("ann@gmail.com", "bob@yahoo.com"), warns=r"UTF-8"),
        ),
        file_case(
            "mixed_utf8_and_cp1252",
            b"name,email\n" + mixed,
            Accept(2, ("jose@gmail.com", "zoe@gmail.com"), warns=r"UTF-8"),
        ),
    ]


def _delimiters() -> list[Case]:
    return [
        file_case("delimiter_semicolon", _utf8("name;email", _swap(GOOD, ";")), _ok(GOOD)),
        file_case("delimiter_tab", _utf8("name\temail", _swap(GOOD, "\t")), _ok(GOOD)),
        file_case("delimiter_pipe", _utf8("name|email", _swap(GOOD, "|")), _ok(GOOD)),
        file_case("one_column_no_delimiter", _utf8("email", GOOD_KEPT), _ok(GOOD_KEPT)),
    ]


def _swap(records: tuple[str, ...], delimiter: str) -> tuple[str, ...]:
    return tuple(r.replace(",", delimiter) for r in records)


def _quotes() -> list[Case]:
    embedded = ('"Doe, Jane",jane@gmail.com', *GOOD)
    doubled = ('"Jane ""JJ"" Doe",jane@gmail.com', *GOOD)
    newline = ('"Jane\nDoe",jane@gmail.com', *GOOD)
    stray = ('Ja"ne,jane@gmail.com', *GOOD)
    # An opening quote with no closing one: the user's file from the report, every line a record.
    mid = ("A,a@gmail.com", '"B,b@gmail.com', "C,c@gmail.com", "D,d@gmail.com")
    at_end = (*GOOD, '"Zed,zed@gmail.com')
    return [
        file_case(
            "quote_embedded_delimiter", _utf8(HEADER, embedded), _ok(embedded, cells=("Doe, Jane",))
        ),
        file_case("quote_doubled", _utf8(HEADER, doubled), _ok(doubled, cells=('Jane "JJ" Doe',))),
        file_case(
            "quote_embedded_newline", _utf8(HEADER, newline), _ok(newline, cells=("Jane\nDoe",))
        ),
        file_case("quote_stray_inside_field", _utf8(HEADER, stray), _ok(stray)),
        file_case(
            "quote_unclosed_mid_file",
            _utf8(HEADER, mid),
            _ok(mid, "a@gmail.com", "c@gmail.com", "d@gmail.com"),
        ),
        file_case("quote_unclosed_at_end", _utf8(HEADER, at_end), _ok(at_end)),
    ]


def _huge() -> list[Case]:
    good = ("Ann,ann@gmail.com", f"{HUGE},bob@yahoo.com", "Cat,cat@outlook.com")
    # The report's shape: a ragged row, then a good row with a field over 131,072 characters.
    after_ragged = ("A,a@gmail.com", "B,b@gmail.com,extra", f"{HUGE},c@gmail.com", "D,d@gmail.com")
    in_ragged = ("A,a@gmail.com", f"B,b@gmail.com,{HUGE}", "C,c@gmail.com", "D,d@gmail.com")
    many_fields = ("A,a@gmail.com", "B," + "," * 20_000, "C,c@gmail.com")
    wide = ",".join(f"c{i}" for i in range(5_000))
    # Over read.max_field_bytes (16 MiB): rejected unread, the rest of the list read.
    over_limit = ("Ann,ann@gmail.com", f"Bob,{'b' * (17 << 20)}@yahoo.com", "Cat,cat@outlook.com")
    return [
        file_case(
            "field_over_16_mib",
            _utf8(HEADER, over_limit),
            _ok(over_limit, "ann@gmail.com", "cat@outlook.com", rejected=("field_too_long",)),
        ),
        file_case("huge_field_in_good_row", _utf8(HEADER, good), _ok(good)),
        file_case(
            "huge_field_after_ragged_row",
            _utf8(HEADER, after_ragged),
            _ok(after_ragged, "a@gmail.com", "c@gmail.com", "d@gmail.com"),
        ),
        file_case(
            "huge_field_in_ragged_row",
            _utf8(HEADER, in_ragged),
            _ok(in_ragged, "a@gmail.com", "c@gmail.com", "d@gmail.com"),
        ),
        file_case(
            "long_line_of_20000_fields",
            _utf8(HEADER, many_fields),
            _ok(many_fields, "a@gmail.com", "c@gmail.com"),
        ),
        file_case(
            "wide_header_5000_columns",
            _utf8(f"{wide},email", (f"{',' * 5_000}ann@gmail.com", f"{',' * 5_000}bob@yahoo.com")),
            Accept(2, ("ann@gmail.com", "bob@yahoo.com")),
        ),
    ]


def _filler() -> list[Case]:
    blank = ("Ann,ann@gmail.com", "", "Bob,bob@yahoo.com", "", "", "Cat,cat@outlook.com")
    spaces = ("Ann,ann@gmail.com", "   ", "\t", "Bob,bob@yahoo.com", " ", "Cat,cat@outlook.com")
    # Excel pads a sheet's used range with empty rows, and sometimes with one delimiter too many.
    semis = ("Ann;ann@gmail.com;Paris;75001", ";;;", ";;;;", "Bob;bob@yahoo.com;Oslo;0150", ";;;")
    semis_in_commas = ("Ann,ann@gmail.com", ";;;;", ";;;;", "Bob,bob@yahoo.com")
    footer = (*GOOD, "", "Total rows: 3", '"Exported by CRM",2024-05-01,page 1 of 1')
    # A Salesforce report exported as CSV: BOM, quoted fields, and its footer lines.
    salesforce = (
        '"Ann","ann@gmail.com","Acme"',
        '"Bob","bob@yahoo.com","Total Energies"',
        '"Cat","cat@outlook.com",""',
        '"Dan","","Copyright Agency"',  # no address, but a record: kept
        '"Grand Totals (4 records)"',
        '""',
        '"Confidential Information - Do Not Distribute"',
        '"Copyright (c) 2000-2024 salesforce.com, inc. All rights reserved."',
    )
    sf_rejects = ("footer", "empty_row", "footer", "footer")
    # A footer line naming an address is never taken for a footer.
    signed = (*GOOD, '"Exported by ann@gmail.com"')
    three = 3 * ("empty_row",)
    # Every data row blank, or delimiters only: records all the same, each an empty_row reject
    # (this was a traceback at write time: an empty batch).
    no_data = ("", "", "")
    only_delimiters = (";", ";;", ";;;")
    return [
        file_case("data_rows_all_blank", _utf8(HEADER, no_data), Accept(3, rejected=three)),
        file_case(
            "data_rows_all_delimiters",
            _utf8("name;email", only_delimiters),
            Accept(3, rejected=three),
        ),
        file_case("blank_lines", _utf8(HEADER, blank), _ok(blank, rejected=three)),
        file_case("whitespace_only_rows", _utf8(HEADER, spaces), _ok(spaces, rejected=three)),
        file_case(
            "semicolon_only_rows",
            _utf8("name;email;city;zip", semis),
            _ok(semis, "ann@gmail.com", "bob@yahoo.com", rejected=three),
        ),
        file_case(
            "semicolon_rows_in_comma_file",
            _utf8(HEADER, semis_in_commas),
            _ok(semis_in_commas, "ann@gmail.com", "bob@yahoo.com", rejected=2 * ("empty_row",)),
        ),
        file_case(
            "report_footer",
            _utf8(HEADER, footer),
            _ok(footer, rejected=("empty_row", "footer", "row has 3 fields but the header has 2")),
        ),
        file_case(
            "salesforce_report",
            b"\xef\xbb\xbf" + _utf8('"Name","Email","Account"', salesforce, "\r\n"),
            _ok(salesforce, cells=("Copyright Agency", "Total Energies"), rejected=sf_rejects),
        ),
        file_case("footer_with_an_address", _utf8(HEADER, signed), _ok(signed, rejected=())),
    ]


def _shapes() -> list[Case]:
    nul = ("Ann\x00,ann@gmail.com", "Bob,bob@yahoo.com", "Cat,cat@outlook.com")
    mixed = b"name,email\r\nAnn,ann@gmail.com\nBob,bob@yahoo.com\rCat,cat@outlook.com\r\n"
    return [
        file_case("header_only", b"name,email\n", Accept(0)),
        file_case("empty_file", b"", Refuse(r"(?i)empty")),
        file_case("blank_lines_only", b"\n\n  \n\t\n", Refuse(r"(?i)empty|no header")),
        # The first line is data: there is no header to name the email column.
        file_case(
            "no_header",
            _utf8("ann@gmail.com,Ann", ("bob@yahoo.com,Bob",)),
            Refuse(r"(?i)column|header"),
        ),
        file_case(
            "duplicate_header_names",
            _utf8("email,name,email", ("ann@gmail.com,Ann,x@gmail.com", "bob@yahoo.com,Bob,")),
            Accept(2, ("ann@gmail.com", "bob@yahoo.com")),
        ),
        file_case("nul_bytes", _utf8(HEADER, nul), _ok(nul)),
        file_case("line_ends_crlf", _utf8(HEADER, GOOD, "\r\n"), _ok(GOOD)),
        file_case("line_ends_lf", _utf8(HEADER, GOOD, "\n"), _ok(GOOD)),
        # Classic Mac OS line ends; with the email column first the loss is silent.
        file_case("line_ends_cr_only", _utf8("email,name", _flip(GOOD), "\r"), _ok(GOOD)),
        file_case("line_ends_mixed", mixed, _ok(GOOD)),
        file_case(
            "no_such_column",
            _utf8(HEADER, GOOD),
            Refuse(r"(?i)column"),
            "list.csv",
            "--email-column",
            "mail_addr",
        ),
    ]


def _flip(records: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(",".join(reversed(r.split(","))) for r in records)


CASES: tuple[Case, ...] = (
    *_encodings(),
    *_delimiters(),
    *_quotes(),
    *_huge(),
    *_filler(),
    *_shapes(),
    *BINARY_CASES,
    *PATH_CASES,
)
