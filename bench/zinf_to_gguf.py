#!/usr/bin/env python3
"""Writes a zinf checkpoint (docs/format.md) as a GGUF v3 file that llama.cpp loads: Llama/Mistral
and Mixtral as its "llama" architecture, Qwen2-MoE as "qwen2moe".

Standard library only (no numpy, no gguf-py). Used by bench/vs_llamacpp.sh so that zinf and llama.cpp
run the same weights.

  zinf_to_gguf.py convert ZINF_DIR OUT.gguf     # f32 checkpoints -> F32 GGUF (f16/bf16 -> F16/BF16)
  zinf_to_gguf.py convert ZINF_DIR OUT.gguf --consume-source
                                                # frees weights.bin's blocks as they are copied, for
                                                # a disk that can't hold both (ZINF_DIR is left
                                                # unusable and is removed at the end)
  zinf_to_gguf.py convert ZINF_DIR OUT.gguf --tokenizer-model FILE
                                                # embeds this SentencePiece tokenizer.model (a
                                                # synthetic checkpoint has none, and llama-server
                                                # needs a real vocabulary to print its answers)
  zinf_to_gguf.py dump FILE.gguf                # metadata and tensor table
  zinf_to_gguf.py compare A.gguf B.gguf         # tensor-by-tensor max |a - b| (F32/F16/BF16 tensors)

What the conversion does:
- canonical zinf tensor names -> llama.cpp names (token_embd, blk.N.attn_q, ..., output);
- GGUF dims are ggml's ne[], fastest first: a zinf [out, in] matrix is written with dims [in, out]
  and the same bytes;
- q and k rows are permuted per head from the Hugging Face rotate_half layout that zinf stores into
  the interleaved-pairs layout llama.cpp's LLM_ARCH_LLAMA RoPE (GGML_ROPE_TYPE_NORM) expects, exactly as
  convert_hf_to_gguf.py's LlamaModel.permute does (for k, with the KV head count);
- 1-D tensors (norms) are always written F32, as convert_hf_to_gguf.py does;
- int4 matrices with groups of 32 (zinf convert --dtype int4 --group-size 32) are written as Q4_1,
  bit for bit the same weights: a zinf group {f16 scale, f16 min} + 32 nibbles (element j low, j + 16
  high) is exactly a Q4_1 block {d, m, qs[16]} with value = d·q + m; other quantized matrices are
  refused;
- mixture-of-experts layers: the router becomes ffn_gate_inp, each layer's experts (one zinf extent
  apiece) are stacked into ffn_{gate,up,down}_exps [E, rows, cols], Qwen2-MoE's shared expert
  becomes ffn_{gate,up,down}_shexp and its sigmoid gate the 1-D ffn_gate_inp_shexp; Qwen2's RoPE is
  rotate_half (llama.cpp's NEOX), so its q/k rows are not permuted;
- tokenizer: a SentencePiece tokenizer.model in the checkpoint becomes tokenizer.ggml.model = "llama"
  with its pieces, scores and types (padded to vocab_size); without one, tokenizer.ggml.model = "none"
  with llama.vocab_size, which llama.cpp accepts (it adds vocab_size dummy tokens; enough for
  llama-bench, which feeds random token ids).
"""
import ctypes
import ctypes.util
import json
import os
import shutil
import struct
import sys

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# gguf metadata value types
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY, \
    T_UINT64, T_INT64, T_FLOAT64 = range(13)
SCALAR_FMT = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
              T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q",
              T_FLOAT64: "<d"}

# ggml tensor types (ggml.h): type id -> (block size in elements, bytes per block, name)
GGML_TYPES = {0: (1, 4, "F32"), 1: (1, 2, "F16"), 2: (32, 18, "Q4_0"), 3: (32, 20, "Q4_1"),
              6: (32, 22, "Q5_0"), 7: (32, 24, "Q5_1"), 8: (32, 34, "Q8_0"), 9: (32, 36, "Q8_1"),
              10: (256, 84, "Q2_K"), 11: (256, 110, "Q3_K"), 12: (256, 144, "Q4_K"),
              13: (256, 176, "Q5_K"), 14: (256, 210, "Q6_K"), 15: (256, 292, "Q8_K"),
              30: (1, 2, "BF16")}
ZINF_DTYPE_TO_GGML = {"f32": 0, "f16": 1, "bf16": 30}
ZINF_DTYPE_SIZE = {"f32": 4, "f16": 2, "bf16": 2}
LLAMA_FTYPE = {"f32": 0, "f16": 1, "bf16": 32}  # llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_BF16

LAYER_TENSORS = {  # zinf canonical name -> llama.cpp name (".weight" unless it ends in ".bias")
    "attn_norm": "attn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
    "ffn_norm": "ffn_norm", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down",
    "q_bias": "attn_q.bias", "k_bias": "attn_k.bias", "v_bias": "attn_v.bias",
    "router": "ffn_gate_inp", "shared_gate": "ffn_gate_shexp", "shared_up": "ffn_up_shexp",
    "shared_down": "ffn_down_shexp", "shared_expert_gate": "ffn_gate_inp_shexp",
}
EXPERT_TENSORS = {"gate": "ffn_gate_exps", "up": "ffn_up_exps", "down": "ffn_down_exps"}
ARCH = {"llama": "llama", "mistral": "llama", "mixtral": "llama", "qwen2_moe": "qwen2moe"}


def fail(msg):
    sys.stderr.write("zinf_to_gguf: " + msg + "\n")
    sys.exit(1)


# ---------------------------------------------------------------- GGUF writing

def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, v):
    if vtype == T_STRING:
        return _str(v)
    return struct.pack(SCALAR_FMT[vtype], v)


class Kv:
    def __init__(self):
        self.items = []

    def add(self, key, vtype, value):
        self.items.append((key, vtype, value))

    def add_array(self, key, etype, values):
        self.items.append((key, T_ARRAY, (etype, values)))

    def encode(self):
        out = bytearray()
        for key, vtype, value in self.items:
            out += _str(key) + struct.pack("<I", vtype)
            if vtype == T_ARRAY:
                etype, values = value
                out += struct.pack("<IQ", etype, len(values))
                if etype == T_STRING:
                    for v in values:
                        out += _str(v)
                else:
                    out += struct.pack("<%d%s" % (len(values), SCALAR_FMT[etype][1]), *values)
            else:
                out += _value(vtype, value)
        return bytes(out)


def _align(n, a=ALIGNMENT):
    return (n + a - 1) // a * a


# ---------------------------------------------------------------- SentencePiece ModelProto

def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) of a protobuf message; value is bytes for wire type 2."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = _varint(buf, pos)
        elif wire == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            v, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported protobuf wire type %d" % wire)
        yield field, wire, v


def read_sentencepiece(path):
    """Returns [(piece, score, type)] from a SentencePiece tokenizer.model (ModelProto field 1)."""
    with open(path, "rb") as f:
        buf = f.read()
    pieces = []
    for field, wire, v in _fields(buf):
        if field != 1 or wire != 2:
            continue
        piece, score, ptype = "", 0.0, 1  # SentencePiece.Type NORMAL = 1
        for f2, w2, v2 in _fields(v):
            if f2 == 1 and w2 == 2:
                piece = v2.decode("utf-8")
            elif f2 == 2 and w2 == 5:
                score = struct.unpack("<f", v2)[0]
            elif f2 == 3 and w2 == 0:
                ptype = v2
        pieces.append((piece, score, ptype))
    return pieces


# ---------------------------------------------------------------- conversion

def _permute_rows(data, n_rows, row_bytes, n_head):
    """convert_hf_to_gguf.py LlamaModel.permute: w.reshape(n_head, 2, hd/2, in).swapaxes(1, 2)."""
    hd = n_rows // n_head
    half = hd // 2
    out = bytearray(len(data))
    for h in range(n_head):
        for i in range(half):
            for j in range(2):
                dst = h * hd + 2 * i + j
                src = h * hd + j * half + i
                out[dst * row_bytes:(dst + 1) * row_bytes] = data[src * row_bytes:(src + 1) * row_bytes]
    return out


def _to_f32(data, dtype):
    if dtype == "f32":
        return data
    n = len(data) // 2
    if dtype == "f16":
        vals = struct.unpack("<%de" % n, data)
        return struct.pack("<%df" % n, *vals)
    # bf16: the upper half of an f32
    out = bytearray(4 * n)
    out[2::4] = data[0::2]
    out[3::4] = data[1::2]
    return bytes(out)


Q4_1 = 3


def n_rows(shape):
    n = 1
    for d in shape[:-1]:
        n *= d
    return n


def _q4_bytes(rows, cols):
    """zinf int4-g32: nibbles [rows][cols / 2], padded to 64 bytes, then {f16 scale, f16 min} per group."""
    nibbles = rows * cols // 2
    return (nibbles + 63) // 64 * 64 + rows * (cols // 32) * 4


def _read_exact(wf, src, size, gname):
    wf.seek(src)
    data = wf.read(size)
    if len(data) != size:
        fail("weights file ends inside %s" % gname)
    return data


def _q4_to_q4_1(data, rows, cols):
    """zinf int4-g32 bytes -> Q4_1 blocks {d, m, qs[16]}, with strided slices (C speed)."""
    blocks = rows * cols // 32
    nibbles = memoryview(data)[:blocks * 16]
    params_at = (blocks * 16 + 63) // 64 * 64
    params = memoryview(data)[params_at:params_at + blocks * 4]
    out = bytearray(blocks * 20)
    for k in range(4):  # d (2 bytes) then m (2 bytes), as zinf stores them per group
        out[k::20] = params[k::4]
    for k in range(16):
        out[4 + k::20] = nibbles[k::16]
    return bytes(out)


def _punch_hole(fd, offset, length):
    """Frees a range of a file's blocks (fallocate PUNCH_HOLE | KEEP_SIZE); the range reads as zeros."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if libc.fallocate(fd, 0x02 | 0x01, offset, length) != 0:
        fail("--consume-source: fallocate(PUNCH_HOLE) failed: %s" % os.strerror(ctypes.get_errno()))


def convert(zinf_dir, out_path, consume_source=False, tokenizer_model=None):
    with open(os.path.join(zinf_dir, "manifest.json")) as f:
        man = json.load(f)
    if man.get("format") != "zinf" or man.get("version") not in (1, 2, 3):
        fail("%s: not a zinf v1/v2/v3 checkpoint" % zinf_dir)
    dtype = man["dtype"]
    if dtype not in ZINF_DTYPE_TO_GGML:
        fail("checkpoint dtype %r: only f32, f16 and bf16 can be written as GGUF "
             "(quantise the F32 GGUF with llama-quantize instead)" % dtype)
    cfg = man["config"]
    if cfg.get("family") != "llama" or cfg.get("model_type") not in ARCH:
        fail("model_type %r: only %s map to a llama.cpp architecture here"
             % (cfg.get("model_type"), ", ".join(ARCH)))
    arch = ARCH[cfg["model_type"]]
    for flag in ("qkv_bias", "o_bias", "mlp_bias", "qk_norm"):
        if cfg.get(flag) and not (flag == "qkv_bias" and arch == "qwen2moe"):
            fail("config has %s: not a plain %s model" % (flag, arch))
    moe = cfg.get("moe") or {}
    rs = cfg.get("rope_scaling") or {"type": "none"}
    if rs.get("type", "none") not in ("none", "linear"):
        fail("rope_scaling type %r is not supported by this script" % rs.get("type"))

    n_head, n_head_kv, head_dim = cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"]
    hidden, n_layer, vocab = cfg["hidden_size"], cfg["num_layers"], cfg["vocab_size"]
    ggml_type = ZINF_DTYPE_TO_GGML[dtype]
    esize = ZINF_DTYPE_SIZE[dtype]
    file_type = LLAMA_FTYPE[dtype]
    if any(t["dtype"] == "int4" for e in man["extents"] for t in e["tensors"]):
        file_type = 3  # llama_ftype MOSTLY_Q4_1

    # ---- metadata
    kv = Kv()
    kv.add("general.architecture", T_STRING, arch)
    kv.add("general.name", T_STRING, os.path.basename(os.path.normpath(zinf_dir)))
    kv.add("general.file_type", T_UINT32, file_type)
    kv.add("general.alignment", T_UINT32, ALIGNMENT)
    kv.add(arch + ".vocab_size", T_UINT32, vocab)
    kv.add(arch + ".context_length", T_UINT32, cfg["max_position_embeddings"])
    kv.add(arch + ".embedding_length", T_UINT32, hidden)
    kv.add(arch + ".block_count", T_UINT32, n_layer)
    kv.add(arch + ".feed_forward_length", T_UINT32, cfg["intermediate_size"])
    kv.add(arch + ".attention.head_count", T_UINT32, n_head)
    kv.add(arch + ".attention.head_count_kv", T_UINT32, n_head_kv)
    kv.add(arch + ".attention.layer_norm_rms_epsilon", T_FLOAT32, float(cfg["norm_eps"]))
    kv.add(arch + ".rope.freq_base", T_FLOAT32, float(cfg["rope_theta"]))
    kv.add(arch + ".rope.dimension_count", T_UINT32, head_dim)
    if head_dim * n_head != hidden:
        kv.add(arch + ".attention.key_length", T_UINT32, head_dim)
        kv.add(arch + ".attention.value_length", T_UINT32, head_dim)
    if moe:
        kv.add(arch + ".expert_count", T_UINT32, moe["num_experts"])
        kv.add(arch + ".expert_used_count", T_UINT32, moe["experts_per_token"])
        if arch == "qwen2moe":
            kv.add(arch + ".expert_feed_forward_length", T_UINT32, moe["expert_ffn"])
            kv.add(arch + ".expert_shared_feed_forward_length", T_UINT32, moe["shared_expert_ffn"])
    if rs.get("type") == "linear":
        kv.add(arch + ".rope.scaling.type", T_STRING, "linear")
        kv.add(arch + ".rope.scaling.factor", T_FLOAT32, float(rs["factor"]))

    tok = man.get("tokenizer") or {}
    sp_path = os.path.join(zinf_dir, tok.get("file", "")) if tok.get("kind") == "sentencepiece" else None
    if tokenizer_model:
        if not os.path.isfile(tokenizer_model):
            fail("--tokenizer-model %s: no such file" % tokenizer_model)
        sp_path = tokenizer_model
    if sp_path and os.path.isfile(sp_path):
        pieces = read_sentencepiece(sp_path)
        if len(pieces) > vocab:
            fail("tokenizer.model has %d pieces, more than vocab_size %d" % (len(pieces), vocab))
        for i in range(len(pieces), vocab):  # as convert_hf_to_gguf.py pads: [PAD<i>], user-defined
            pieces.append(("[PAD%d]" % i, -1000.0, 4))
        kv.add("tokenizer.ggml.model", T_STRING, "llama")
        kv.add("tokenizer.ggml.pre", T_STRING, "default")
        kv.add_array("tokenizer.ggml.tokens", T_STRING, [p[0] for p in pieces])
        kv.add_array("tokenizer.ggml.scores", T_FLOAT32, [p[1] for p in pieces])
        kv.add_array("tokenizer.ggml.token_type", T_INT32, [p[2] for p in pieces])
        unk = next((i for i, p in enumerate(pieces) if p[2] == 2), 0)
        kv.add("tokenizer.ggml.unknown_token_id", T_UINT32, unk)
        mode = "sentencepiece"
    else:
        kv.add("tokenizer.ggml.model", T_STRING, "none")
        mode = "none (%d dummy tokens)" % vocab
    bos = cfg.get("bos_token_id", -1)
    if bos is not None and bos >= 0:
        kv.add("tokenizer.ggml.bos_token_id", T_UINT32, bos)
    eos = cfg.get("eos_token_ids") or []
    if eos:
        kv.add("tokenizer.ggml.eos_token_id", T_UINT32, eos[0])
    kv.add("tokenizer.ggml.add_bos_token", T_BOOL, bool(tok.get("add_bos", True)))
    kv.add("tokenizer.ggml.add_eos_token", T_BOOL, bool(tok.get("add_eos", False)))

    # ---- tensors: (gguf name, shape, ggml type, [(source offset in weights.bin, size)], q/k heads
    # to permute). A layer's experts are stacked into one tensor, after the layer's own tensors.
    tensors = []
    stacked = {}  # (layer, canonical name) -> [(offset, size)] in expert order
    for ext in man["extents"]:
        for t in ext["tensors"]:
            name, shape = t["name"], t["shape"]
            q4 = t["dtype"] == "int4"
            if t["dtype"] != dtype and not (q4 and t.get("group_size") == 32):
                fail("tensor %s has dtype %s: only float tensors and int4 with groups of 32 can be "
                     "written; make an F32 GGUF and use llama-quantize" % (name, t["dtype"]))
            if q4 and shape[1] % 32:
                fail("tensor %s: %d columns are not whole Q4_1 blocks" % (name, shape[1]))
            mtype = Q4_1 if q4 else ggml_type
            src = ext["offset"] + t["offset"]
            if ext["kind"] == "expert":
                pieces = stacked.setdefault((ext["layer"], name), [])
                if len(pieces) != ext["expert"]:
                    fail("expert extents of layer %d out of order" % ext["layer"])
                pieces.append((src, t["size_bytes"]))
                if ext["expert"] == moe["num_experts"] - 1:
                    gname = "blk.%d.%s.weight" % (ext["layer"], EXPERT_TENSORS[name])
                    tensors.append((gname, [len(pieces)] + shape, mtype, pieces, None))
                continue
            if ext["kind"] == "embedding":
                if name != "token_embed":
                    fail("unexpected embedding tensor %s" % name)
                gname = "token_embd.weight"
            elif ext["kind"] == "head":
                gname = {"final_norm": "output_norm.weight", "lm_head": "output.weight"}.get(name)
                if gname is None:
                    fail("unexpected head tensor %s" % name)
            else:
                if name not in LAYER_TENSORS:
                    fail("unexpected layer tensor %s in %s" % (name, ext["name"]))
                suffix = LAYER_TENSORS[name]
                gname = "blk.%d.%s" % (ext["layer"], suffix if suffix.endswith(".bias")
                                       else suffix + ".weight")
            if name == "shared_expert_gate":
                shape = [shape[1]]  # llama.cpp's ffn_gate_inp_shexp is a vector {n_embd}
            perm = None
            if ext["kind"] == "layer" and arch == "llama":
                perm = {"q": n_head, "k": n_head_kv}.get(name)
            gtype = 0 if len(shape) == 1 else mtype
            tensors.append((gname, shape, gtype, [(src, t["size_bytes"])], perm))

    infos = bytearray()
    offset = 0
    sizes = []
    for gname, shape, gtype, pieces, perm in tensors:
        size = sum(piece[1] for piece in pieces)
        n = 1
        for d in shape:
            n *= d
        if gtype == Q4_1:
            nbytes = n // 32 * 20  # each piece's size is checked as it is transcoded
        else:
            nbytes = n * (4 if gtype == 0 else esize)
            if size != n * esize:
                fail("tensor %s: size_bytes %d does not match its shape" % (gname, size))
        dims = list(reversed(shape))  # ggml ne[]: fastest-varying first
        infos += _str(gname) + struct.pack("<I", len(dims))
        infos += struct.pack("<%dQ" % len(dims), *dims)
        infos += struct.pack("<IQ", gtype, offset)
        sizes.append((offset, nbytes))
        offset = _align(offset + nbytes)

    header = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(kv.items))
    head = header + kv.encode() + bytes(infos)
    tmp = out_path + ".tmp"
    weights_path = os.path.join(zinf_dir, man.get("weights_file", "weights.bin"))
    with open(weights_path, "r+b" if consume_source else "rb") as wf, \
            open(tmp, "wb") as out:
        out.write(head)
        out.write(b"\0" * (_align(len(head)) - len(head)))
        data_start = out.tell()
        for (gname, shape, gtype, pieces, perm), (doff, nbytes) in zip(tensors, sizes):
            out.write(b"\0" * (data_start + doff - out.tell()))
            rows = n_rows(shape) // len(pieces)  # of each piece: an expert, or the whole tensor
            for src, size in pieces:
                if gtype == Q4_1:
                    if size != _q4_bytes(rows, shape[-1]):
                        fail("tensor %s: %d bytes are not int4-g32 of %d x %d"
                             % (gname, size, rows, shape[-1]))
                    data = _q4_to_q4_1(_read_exact(wf, src, size, gname), rows, shape[-1])
                    if perm is not None:  # rows are whole blocks: permute them after transcoding
                        data = _permute_rows(data, rows, len(data) // rows, perm)
                    out.write(data)
                elif perm is not None:
                    out.write(_permute_rows(_read_exact(wf, src, size, gname), rows, size // rows,
                                            perm))
                elif gtype == 0 and dtype != "f32":
                    out.write(_to_f32(_read_exact(wf, src, size, gname), dtype))
                else:
                    wf.seek(src)
                    left = size
                    while left:
                        chunk = wf.read(min(left, 64 << 20))
                        if not chunk:
                            fail("weights file ends inside %s" % gname)
                        out.write(chunk)
                        left -= len(chunk)
                if consume_source:
                    out.flush()
                    os.fsync(out.fileno())  # the copy is on disk before its source is freed
                    _punch_hole(wf.fileno(), src, size)
        end = data_start + offset
        out.write(b"\0" * (end - out.tell()))
    os.replace(tmp, out_path)
    if consume_source:
        shutil.rmtree(zinf_dir)
    sys.stderr.write("zinf_to_gguf: wrote %s: %d tensors, %s, tokenizer %s, %.1f MB\n"
                     % (out_path, len(tensors), dtype, mode, os.path.getsize(out_path) / 1e6))


# ---------------------------------------------------------------- GGUF reading (dump / compare)

class Reader:
    def __init__(self, path):
        self.f = open(path, "rb")
        if self.f.read(4) != GGUF_MAGIC:
            fail("%s: not a GGUF file" % path)
        self.version, n_tensors, n_kv = struct.unpack("<IQQ", self.f.read(20))
        self.kv = {}
        for _ in range(n_kv):
            key = self._str()
            vtype = self._u32()
            self.kv[key] = self._val(vtype)
        self.tensors = {}
        for _ in range(n_tensors):
            name = self._str()
            nd = self._u32()
            dims = struct.unpack("<%dQ" % nd, self.f.read(8 * nd))
            gtype, off = struct.unpack("<IQ", self.f.read(12))
            self.tensors[name] = (dims, gtype, off)
        align = self.kv.get("general.alignment", ALIGNMENT)
        self.data_start = _align(self.f.tell(), align)

    def _u32(self):
        return struct.unpack("<I", self.f.read(4))[0]

    def _str(self):
        n = struct.unpack("<Q", self.f.read(8))[0]
        return self.f.read(n).decode("utf-8", "replace")

    def _val(self, vtype):
        if vtype == T_STRING:
            return self._str()
        if vtype == T_ARRAY:
            etype = self._u32()
            n = struct.unpack("<Q", self.f.read(8))[0]
            return [self._val(etype) for _ in range(n)]
        fmt = SCALAR_FMT[vtype]
        return struct.unpack(fmt, self.f.read(struct.calcsize(fmt)))[0]

    def values(self, name):
        """The tensor's elements as floats (F32, F16, BF16 only)."""
        dims, gtype, off = self.tensors[name]
        n = 1
        for d in dims:
            n *= d
        self.f.seek(self.data_start + off)
        if gtype == 0:
            return struct.unpack("<%df" % n, self.f.read(4 * n))
        if gtype == 1:
            return struct.unpack("<%de" % n, self.f.read(2 * n))
        if gtype == 30:
            return struct.unpack("<%df" % n, _to_f32(self.f.read(2 * n), "bf16"))
        raise ValueError("tensor %s: type %s cannot be read here" % (name, GGML_TYPES.get(gtype)))


def dump(path):
    r = Reader(path)
    print("GGUF v%d, %d keys, %d tensors" % (r.version, len(r.kv), len(r.tensors)))
    for k, v in r.kv.items():
        if isinstance(v, list) and len(v) > 8:
            v = "[%d items: %s ...]" % (len(v), ", ".join(repr(x) for x in v[:5]))
        print("  %s = %r" % (k, v))
    for name, (dims, gtype, off) in r.tensors.items():
        print("  %-28s %-6s %s @%d" % (name, GGML_TYPES.get(gtype, (0, 0, str(gtype)))[2], list(dims), off))


def compare(a_path, b_path):
    """Max abs difference per tensor. A missing output.weight on one side is compared to token_embd
    (tied embeddings: zinf always writes an explicit head)."""
    a, b = Reader(a_path), Reader(b_path)
    names = sorted(set(a.tensors) | set(b.tensors))
    worst = 0.0
    bad = 0
    for name in names:
        na = name if name in a.tensors else ("token_embd.weight" if name == "output.weight" else None)
        nb = name if name in b.tensors else ("token_embd.weight" if name == "output.weight" else None)
        if na is None or nb is None:
            print("%-28s only in %s" % (name, "A" if na else "B"))
            bad += 1
            continue
        da, db = a.tensors[na][0], b.tensors[nb][0]
        if da != db:
            print("%-28s dims differ: %s vs %s" % (name, list(da), list(db)))
            bad += 1
            continue
        va, vb = a.values(na), b.values(nb)
        diff = max(abs(x - y) for x, y in zip(va, vb))
        worst = max(worst, diff)
        note = "" if (na, nb) == (name, name) else "  (%s vs %s)" % (na, nb)
        print("%-28s %-16s max|a-b| = %.3g%s" % (name, list(da), diff, note))
    keys = sorted(set(a.kv) | set(b.kv))
    for k in keys:
        va, vb = a.kv.get(k), b.kv.get(k)
        if va != vb:
            short = lambda v: ("[%d items]" % len(v)) if isinstance(v, list) and len(v) > 8 else repr(v)
            print("key %-44s A=%s B=%s" % (k, short(va), short(vb)))
    print("tensors: %d, structural mismatches: %d, max |a-b| over all: %.3g" % (len(names), bad, worst))
    return 1 if bad or worst > 0 else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "convert":
        options, rest = {"consume_source": False, "tokenizer_model": None}, argv[3:]
        while rest:
            if rest[0] == "--consume-source":
                options["consume_source"], rest = True, rest[1:]
            elif rest[0] == "--tokenizer-model" and len(rest) >= 2:
                options["tokenizer_model"], rest = rest[1], rest[2:]
            else:
                sys.stderr.write(__doc__)
                return 2
        convert(argv[1], argv[2], **options)
        return 0
    if len(argv) == 2 and argv[0] == "dump":
        dump(argv[1])
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
