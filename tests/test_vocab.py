from tvm_tensorgpt.language import VOCAB, Vocabulary
from tvm_tensorgpt.language.vocab import split_name


def test_vocabulary_is_deterministic_and_unique():
    again = Vocabulary()
    assert again.tokens == VOCAB.tokens
    assert len(set(VOCAB.tokens)) == len(VOCAB)
    assert VOCAB.tokens[:4] == ["<pad>", "<bos>", "<eos>", "<sep>"]


def test_unknowns_map_to_explicit_tokens():
    assert VOCAB.instruction("NotAnInstruction") == "<unk>"
    assert VOCAB.number(1031) == "<unk_num>"  # prime > 1024: not representable
    assert VOCAB.id("N1031") == VOCAB.id("<unk_num>")
    assert VOCAB.id("totally-unknown") == VOCAB.id("<unk>")
    assert VOCAB.words("T_softmax_maxelem") == ["W_t", "W_softmax", "W_maxelem"]
    assert VOCAB.words("frobnicate") == ["<unk>"]
    assert VOCAB.bucket("HW_QUANTUM") == "HW_UNKNOWN"


def test_numbers_cover_smooth_extents():
    for n in (0, 1, 7, 1024, 3136, 50176, 12 * 128 * 128, 1 << 20):
        assert VOCAB.has_number(n), n
    assert VOCAB.decode(VOCAB.encode(["N64", "C3", "L-2"])) == ["N64", "C3", "L-2"]


def test_split_name():
    assert split_name("conv2d_nchw") == ["conv2d", "nchw"]
    assert split_name("T_matmul_NN") == ["t", "matmul", "nn"]
    assert split_name("compute_1") == ["compute"]
