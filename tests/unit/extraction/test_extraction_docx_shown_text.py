"""DOCX text is the text a reader of the document is shown (P-GEN-02, K-DOC-06, KB-GEN-01): hidden
text, whether formatted hidden directly or through a style, and the placeholder prompts of empty
content controls are not extracted; the alternative text of images is, where the image stands, as a
screen reader reads it; comments are not. Each document is a package written here with zipfile,
its WordprocessingML spelled out as Word writes it.
"""

from __future__ import annotations

import io
import zipfile

import pytest

from notochord.errors import KnowledgeValidationError
from notochord.extraction.docx import read_docx
from notochord.extraction.text import extract_text

_NS = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:v="urn:schemas-microsoft-com:vml" '
    'xmlns:o="urn:schemas-microsoft-com:office:office"'
)
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml"


def _docx(body: str, *, styles: str = "", comments: str | None = None) -> bytes:
    """A DOCX whose body is ``body``, whose styles part holds ``styles`` after Word's defaults
    (Normal and Default Paragraph Font), and with a comments part when ``comments`` is given."""
    relationships = f'<Relationship Id="rIdS" Type="{_REL}/styles" Target="styles.xml"/>'
    overrides = f'<Override PartName="/word/styles.xml" ContentType="{_MAIN}.styles+xml"/>'
    parts = {
        "word/document.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f"<w:document {_NS}><w:body>{body}<w:sectPr/></w:body></w:document>",
        "word/styles.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles {_NS}>'
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
        '<w:style w:type="character" w:default="1" w:styleId="DefaultParagraphFont">'
        '<w:name w:val="Default Paragraph Font"/></w:style>'
        f"{styles}</w:styles>",
    }
    if comments is not None:
        relationships += f'<Relationship Id="rIdC" Type="{_REL}/comments" Target="comments.xml"/>'
        overrides += f'<Override PartName="/word/comments.xml" ContentType="{_MAIN}.comments+xml"/>'
        parts["word/comments.xml"] = (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:comments {_NS}>{comments}</w:comments>'
        )
    parts["word/_rels/document.xml.rels"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{relationships}'
        "</Relationships>"
    )
    parts["_rels/.rels"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="word/document.xml"/></Relationships>'
    )
    parts["[Content_Types].xml"] = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/word/document.xml" ContentType="{_MAIN}.document.main+xml"/>{overrides}</Types>'
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in (
            "[Content_Types].xml",
            "_rels/.rels",
            *sorted(set(parts) - {"[Content_Types].xml", "_rels/.rels"}),
        ):
            archive.writestr(name, parts[name])
    return out.getvalue()


def _text(data: bytes) -> str:
    return extract_text(data, filename="report.docx").text


def _p(*runs: str, properties: str = "") -> str:
    return f"<w:p>{f'<w:pPr>{properties}</w:pPr>' if properties else ''}{''.join(runs)}</w:p>"


def _r(text: str, properties: str = "") -> str:
    return f'<w:r>{f"<w:rPr>{properties}</w:rPr>" if properties else ""}<w:t xml:space="preserve">{text}</w:t></w:r>'


# --- hidden text ----------------------------------------------------------------------------------


def test_text_formatted_hidden_is_not_extracted() -> None:
    """Word does not show or print hidden text (``w:vanish``) unless its user asks to see hidden
    formatting: a search of the vault finds what the document shows, not a hidden note to self."""
    body = _p(_r("Price: 40 EUR"), _r(" (floor price 25 EUR, do not tell)", "<w:vanish/>"), _r(" per seat"))
    body += _p(_r("Internal draft notes", "<w:b/><w:vanish/>"))
    body += _p(_r("Thanks for reading"))
    assert _text(_docx(body)) == "Price: 40 EUR per seat\n\nThanks for reading"


@pytest.mark.parametrize("off", ['w:val="0"', 'w:val="false"', 'w:val="off"'])
def test_hidden_formatting_switched_off_keeps_the_text(off: str) -> None:
    body = _p(_r("Shown", f"<w:vanish {off}/>"))
    assert _text(_docx(body)) == "Shown"


def test_text_in_a_character_style_that_hides_it_is_not_extracted() -> None:
    """A character style (``w:rStyle``) that sets hidden hides every run it is applied to, also
    through the style it is based on."""
    styles = (
        '<w:style w:type="character" w:styleId="Secret"><w:name w:val="Secret"/><w:rPr><w:vanish/></w:rPr></w:style>'
        '<w:style w:type="character" w:styleId="TopSecret"><w:name w:val="Top Secret"/><w:basedOn w:val="Secret"/>'
        "<w:rPr><w:b/></w:rPr></w:style>"
    )
    body = _p(
        _r("Visible "),
        _r("hidden by style ", '<w:rStyle w:val="Secret"/>'),
        _r("hidden by the style it is based on ", '<w:rStyle w:val="TopSecret"/>'),
        _r("shown again", '<w:rStyle w:val="Secret"/><w:vanish w:val="0"/>'),
    )
    assert _text(_docx(body, styles=styles)) == "Visible shown again"


def test_a_paragraph_style_that_hides_text_hides_its_paragraphs() -> None:
    """A paragraph style's run properties apply to every run of its paragraphs; a run can show
    itself again with direct formatting, and a hiding character style on text in a hidden
    paragraph toggles it back to shown, as Word combines the two styles."""
    styles = (
        '<w:style w:type="paragraph" w:styleId="Hidden"><w:name w:val="Hidden Note"/><w:basedOn w:val="Normal"/>'
        "<w:rPr><w:vanish/></w:rPr></w:style>"
        '<w:style w:type="paragraph" w:styleId="HiddenChild"><w:name w:val="Hidden Child"/>'
        '<w:basedOn w:val="Hidden"/></w:style>'
        '<w:style w:type="character" w:styleId="Secret"><w:name w:val="Secret"/><w:rPr><w:vanish/></w:rPr></w:style>'
    )
    body = _p(_r("Agenda"))
    body += _p(_r("Remember to cut item 3"), properties='<w:pStyle w:val="Hidden"/>')
    body += _p(_r("Inherited hiding"), properties='<w:pStyle w:val="HiddenChild"/>')
    body += _p(
        _r("Concealed "),
        _r("Item 1", "<w:vanish w:val='0'/>"),
        _r(" and item 2", '<w:rStyle w:val="Secret"/>'),
        properties='<w:pStyle w:val="Hidden"/>',
    )
    assert _text(_docx(body, styles=styles)) == "Agenda\n\nItem 1 and item 2"


def test_a_hidden_default_paragraph_style_hides_paragraphs_that_name_no_style() -> None:
    styles = "<w:docDefaults><w:rPrDefault><w:rPr><w:vanish/></w:rPr></w:rPrDefault></w:docDefaults>"
    body = _p(_r("All hidden by the document defaults")) + _p(_r("except this", "<w:vanish w:val='0'/>"))
    assert _text(_docx(body, styles=styles)) == "except this"


def test_runs_marked_always_hidden_are_not_extracted() -> None:
    """``w:specVanish`` hides a run even where hidden text is shown."""
    body = _p(_r("Seen"), _r(" never seen", "<w:specVanish/>"))
    assert _text(_docx(body)) == "Seen"


def test_a_hidden_paragraph_mark_keeps_the_paragraphs_shown_text() -> None:
    """The run properties of a paragraph mark (``w:pPr/w:rPr``) format only the mark: a hidden mark
    (Word's style separator, ``w:specVanish``) runs the paragraph into the next on screen, and the
    paragraph's text is still shown, so it is kept. A paragraph whose runs are hidden too is gone."""
    body = _p(_r("Scope."), properties='<w:pStyle w:val="Heading1"/><w:rPr><w:vanish/><w:specVanish/></w:rPr>')
    body += _p(_r(" This policy covers every site."))
    body += _p(_r("Gone entirely", "<w:vanish/>"), properties="<w:rPr><w:vanish/></w:rPr>")
    assert _text(_docx(body)) == "Scope.\n\nThis policy covers every site."


def test_hidden_text_is_left_out_of_tables_text_boxes_and_hidden_runs_hide_their_text_boxes() -> None:
    cell = "<w:tc><w:p>{}</w:p></w:tc>"
    box = (
        "<w:r>{}<w:drawing><wp:anchor><wp:docPr id='1' name='Text Box 1'/><a:graphic><a:graphicData>"
        "<w:txbxContent><w:p>{}</w:p></w:txbxContent></a:graphicData></a:graphic></wp:anchor></w:drawing></w:r>"
    )
    body = "<w:tbl><w:tr>" + cell.format(_r("Name")) + cell.format(_r("Code", "<w:vanish/>")) + "</w:tr></w:tbl>"
    body += _p(_r("Anchor"), box.format("", _r("Box text") + _r(" hidden in the box", "<w:vanish/>")))
    body += _p(_r("Second"), box.format("<w:rPr><w:vanish/></w:rPr>", _r("A box in a hidden run")))
    assert _text(_docx(body)) == "Name\n\nAnchor\n\nBox text\n\nSecond"


def test_hidden_text_costs_nothing_against_the_text_limit() -> None:
    body = _p(_r("x" * 100, "<w:vanish/>"), _r("shown"))
    assert read_docx(io.BytesIO(_docx(body)), max_text_chars=5).blocks == [("Normal", "shown")]
    with pytest.raises(KnowledgeValidationError, match="over the limit of 4 characters"):
        read_docx(io.BytesIO(_docx(body)), max_text_chars=4)


def test_a_cycle_of_based_on_styles_is_read_without_looping() -> None:
    styles = (
        '<w:style w:type="character" w:styleId="A"><w:name w:val="A"/><w:basedOn w:val="B"/></w:style>'
        '<w:style w:type="character" w:styleId="B"><w:name w:val="B"/><w:basedOn w:val="A"/></w:style>'
    )
    assert _text(_docx(_p(_r("Loops", '<w:rStyle w:val="A"/>')), styles=styles)) == "Loops"


# --- content control placeholders -----------------------------------------------------------------


def test_the_placeholder_prompt_of_an_empty_content_control_is_not_extracted() -> None:
    """An empty content control shows a prompt ("Click or tap here to enter text.") in grey until it
    is filled (``w:showingPlcHdr``): the prompt is the template's, not the document's content."""
    prompt = _r("Click or tap here to enter text.", '<w:rStyle w:val="PlaceholderText"/>')
    body = _p(
        _r("Client: "),
        f"<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent>{prompt}</w:sdtContent></w:sdt>",
    )
    body += f"<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent>{_p(prompt)}</w:sdtContent></w:sdt>"
    body += _p(
        _r("Project: "),
        f"<w:sdt><w:sdtPr><w:showingPlcHdr w:val='0'/></w:sdtPr><w:sdtContent>{_r('Harbour bridge')}</w:sdtContent>"
        "</w:sdt>",
        f"<w:sdt><w:sdtPr/><w:sdtContent>{_r(' phase 2')}</w:sdtContent></w:sdt>",
    )
    assert _text(_docx(body)) == "Client:\n\nProject: Harbour bridge phase 2"


def test_a_placeholder_in_a_table_cell_leaves_the_row_and_its_other_cells() -> None:
    cell = "<w:tc>{}</w:tc>"
    placeholder = (
        f"<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent>{_p(_r('Enter a date.'))}</w:sdtContent></w:sdt>"
    )
    body = "<w:tbl><w:tr>" + cell.format(_p(_r("Due"))) + cell.format(placeholder) + "</w:tr></w:tbl>"
    assert _text(_docx(body)) == "Due"


# --- image alternative text -----------------------------------------------------------------------


def _picture(descr: str | None = None, title: str | None = None, *, picture_descr: str | None = None,
             anchored: bool = False, decorative: bool = False) -> str:  # fmt: skip
    """A run drawing a picture, with the alternative text Word writes for it."""
    attributes = "".join(
        f' {name}="{value}"' for name, value in (("descr", descr), ("title", title)) if value is not None
    )
    extension = (
        '<a:extLst><a:ext uri="{C183D7F6-B498-43B3-948B-1728B52AA6E4}">'
        '<adec:decorative xmlns:adec="http://schemas.microsoft.com/office/drawing/2017/decorative" val="1"/>'
        "</a:ext></a:extLst>"
        if decorative
        else ""
    )
    inner = f' descr="{picture_descr}"' if picture_descr is not None else ""
    kind = "anchor" if anchored else "inline"
    return (
        f'<w:r><w:drawing><wp:{kind}><wp:extent cx="1" cy="1"/><wp:docPr id="1" name="Picture 1"{attributes}>'
        f"{extension}</wp:docPr><a:graphic><a:graphicData>"
        f'<pic:pic><pic:nvPicPr><pic:cNvPr id="0" name="image1.png"{inner}/><pic:cNvPicPr/></pic:nvPicPr>'
        f'<pic:blipFill><a:blip r:embed="rId9"/></pic:blipFill></pic:pic>'
        f"</a:graphicData></a:graphic></wp:{kind}></w:drawing></w:r>"
    )


def test_the_alternative_text_of_an_image_is_extracted_where_the_image_stands() -> None:
    """A screen reader reads an image's alternative text where the image stands: an inline image's
    in its line, a floating image's after the paragraph it is anchored in."""
    body = _p(_r("Press"), _picture("gear icon"), _r("to open the settings."))
    body += _p(_picture("Bar chart: revenue rose from 2 to 3 million in 2024"))
    body += _p(_r("The plant at night."), _picture("Cooling towers lit from below", anchored=True))
    assert _text(_docx(body)) == (
        "Press gear icon to open the settings.\n\nBar chart: revenue rose from 2 to 3 million in 2024"
        "\n\nThe plant at night.\n\nCooling towers lit from below"
    )


def test_an_images_title_and_description_are_both_read_and_the_picture_description_is_a_fallback() -> None:
    body = _p(_picture("Map of the three sites", "Site map"))
    body += _p(_picture(picture_descr="Signature of the director"))
    body += _p(_picture("Same words", "Same words"))
    assert _text(_docx(body)) == "Site map: Map of the three sites\n\nSignature of the director\n\nSame words"


@pytest.mark.parametrize(
    "descr",
    ["", "   ", "image1.png", "IMG_2041.JPG", "Picture 3", "image", "Grafik 2", "Screenshot"],
    ids=["empty", "blank", "file-name", "camera-file-name", "picture-n", "image", "grafik-n", "screenshot"],
)
def test_empty_and_generic_alternative_text_is_not_extracted(descr: str) -> None:
    """Alternative text that says nothing of what the image shows (none, a file name, a generic
    "Picture 3") is left out; the body text around it stays."""
    assert _text(_docx(_p(_r("Before"), _picture(descr, picture_descr=descr)))) == "Before"


def test_decorative_images_and_words_generated_of_alternative_text_are_left_out() -> None:
    """An image marked decorative is skipped by screen readers; Word's note that it generated the
    description ("Description automatically generated") is no part of what the image shows."""
    body = _p(_r("Heading art"), _picture("flourish", decorative=True))
    body += _p(_picture("A dog on a beach&#xA;&#xA;Description automatically generated"))
    body += _p(_picture("A close-up of a form&#xA;&#xA;Description automatically generated with medium confidence"))
    assert _text(_docx(body)) == "Heading art\n\nA dog on a beach\n\nA close-up of a form"


def test_the_alternative_text_of_a_hidden_image_is_not_extracted_and_counts_against_the_limit() -> None:
    body = _p(_r("Shown"), "<w:r><w:rPr><w:vanish/></w:rPr>" + _picture("hidden image")[5:])
    assert _text(_docx(body)) == "Shown"
    with pytest.raises(KnowledgeValidationError, match="over the limit of 10 characters"):
        read_docx(io.BytesIO(_docx(_p(_picture("eleven char")))), max_text_chars=10)


def _vml(alt: str | None = None, *, image_title: str | None = None, shape_title: str | None = None,
         style: str = "width:120pt;height:80pt", inner: str = "") -> str:  # fmt: skip
    """A run drawing a picture in VML, as Word 2003 and Word's compatibility mode write it."""
    attributes = "".join(
        f' {name}="{value}"' for name, value in (("alt", alt), ("title", shape_title)) if value is not None
    )
    imagedata = f' o:title="{image_title}"' if image_title is not None else ""
    return (
        f'<w:r><w:pict><v:shape id="_x0000_i1025" type="#_x0000_t75" style="{style}"{attributes}>'
        f'<v:imagedata r:id="rId9"{imagedata}/>{inner}</v:shape></w:pict></w:r>'
    )


def test_the_alternative_text_of_an_old_vml_picture_is_extracted_where_it_stands() -> None:
    """A picture of an older document (VML) says what it shows in its shape's ``alt`` and its
    image's ``o:title``, read as a DrawingML picture's are: inline in its line, a floating one after
    its paragraph."""
    body = _p(_r("Press"), _vml("gear icon"), _r("to open the settings."))
    body += _p(_vml("Map of the three sites", image_title="Site map"))
    body += _p(_vml(image_title="Company logo"))
    body += _p(_r("The plant at night."), _vml("Cooling towers", style="position:absolute;margin-left:10pt"))
    assert _text(_docx(body)) == (
        "Press gear icon to open the settings.\n\nSite map: Map of the three sites\n\nCompany logo"
        "\n\nThe plant at night.\n\nCooling towers"
    )


def test_a_vml_groups_own_text_comes_first_and_its_shapes_text_is_the_fallback() -> None:
    group = (
        '<w:r><w:pict><v:group style="width:100pt;height:100pt"{alt}>'
        '<v:rect alt="Org chart: Ana leads two teams"/><v:oval alt="Second shape"/></v:group></w:pict></w:r>'
    )
    body = _p(group.format(alt=' alt="Team structure"')) + _p(group.format(alt=""))
    assert _text(_docx(body)) == "Team structure\n\nOrg chart: Ana leads two teams"


@pytest.mark.parametrize(
    "alt",
    ["", "   ", "image001.png", "Picture 3", "image1"],
    ids=["empty", "blank", "file-name", "picture-n", "image-n"],
)
def test_empty_and_generic_vml_alternative_text_is_not_extracted(alt: str) -> None:
    assert _text(_docx(_p(_r("Before"), _vml(alt, image_title=alt, shape_title=alt)))) == "Before"


def test_a_vml_picture_word_stores_as_the_fallback_of_a_drawing_is_read_once() -> None:
    alternate = (
        "<w:r><mc:AlternateContent><mc:Choice Requires=\"wps\">" + _picture("Floor plan")[5:-6]
        + "</mc:Choice><mc:Fallback>" + _vml("Floor plan (VML)")[5:-6] + "</mc:Fallback></mc:AlternateContent></w:r>"
    )  # fmt: skip
    assert _text(_docx(_p(alternate))) == "Floor plan"


def test_hidden_vml_pictures_are_not_extracted() -> None:
    """A VML shape styled ``visibility: hidden`` is not shown, and a hidden run hides its picture."""
    body = _p(_r("Shown"), _vml("Watermark", style="visibility:hidden;position:absolute"))
    body += _p("<w:r><w:rPr><w:vanish/></w:rPr>" + _vml("Hidden picture")[5:])
    assert _text(_docx(body)) == "Shown"


# --- comments -------------------------------------------------------------------------------------


def test_comments_are_not_extracted() -> None:
    """Comments are reviewers' notes in the margin, not the document's text (Word leaves them out
    of a printed copy unless asked): the commented text is extracted, the comment is not."""
    body = _p(
        '<w:commentRangeStart w:id="0"/>',
        _r("The deadline is Friday."),
        '<w:commentRangeEnd w:id="0"/>',
        '<w:r><w:rPr><w:rStyle w:val="CommentReference"/></w:rPr><w:commentReference w:id="0"/></w:r>',
    )
    comments = f'<w:comment w:id="0" w:author="Ana" w:initials="A">{_p(_r("Is it really Friday?"))}</w:comment>'
    assert _text(_docx(body, comments=comments)) == "The deadline is Friday."
