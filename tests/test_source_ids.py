"""Source ids (issue 15): NFC-normalised; bidi controls and ids with no visible character are refused."""

import unicodedata

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import InputError


def test_nfc_and_nfd_spellings_are_one_source():
    nfc, nfd = unicodedata.normalize("NFC", "é.md"), unicodedata.normalize("NFD", "é.md")
    assert nfc != nfd
    kb = crux_nb.knowledge_base(id="u")
    kb.add_text(nfd, "# E\n\nFirst version.")
    kb.add_text(nfc, "# E\n\nSecond version.")
    assert kb.documents["source_id"].tolist() == [nfc]
    assert "Second" in kb.chunks["content"].iloc[0]
    kb.add_frame(pd.DataFrame({"id": [nfd], "text": ["# E\n\nThird."]}))
    assert kb.documents["source_id"].tolist() == [nfc]
    kb.remove(nfd)
    assert kb.documents.empty


@pytest.mark.parametrize("bad,said", [
    ("a\u202egpj.md", "U+202E"), ("\u2067x.md", "U+2067"), ("x\u200f.md", "U+200F"),
])
def test_bidi_controls_are_refused(bad, said):
    kb = crux_nb.knowledge_base(id="u")
    with pytest.raises(InputError, match=f"bidirectional control character U\\+{said[2:]}") as info:
        kb.add_text(bad, "# X\n\nText.")
    assert info.value.message.startswith("source id ") and kb.documents.empty


@pytest.mark.parametrize("bad", ["\u200d", "\u200b\u200c", "\u3164", "\u00a0\u2060", "\u0301"])
def test_ids_with_no_visible_character_are_refused(bad):
    kb = crux_nb.knowledge_base(id="u")
    with pytest.raises(InputError, match="has no visible character"):
        kb.add_text(bad, "# X\n\nText.")


@pytest.mark.parametrize("good", ["a\u200db.md", "שלום.md", "emoji-👩‍💻.md", "e\u0301.md"])
def test_visible_ids_with_joiners_or_rtl_letters_are_fine(good):
    kb = crux_nb.knowledge_base(id="u")
    kb.add_text(good, "# X\n\nText.")
    assert kb.documents["source_id"].tolist() == [unicodedata.normalize("NFC", good)]
