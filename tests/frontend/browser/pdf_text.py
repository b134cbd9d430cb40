"""The text of a PDF as Chromium (Skia) writes it: enough to check that labels are in it.

Skia writes text as hex glyph ids (``<0044004C> Tj``) in Flate streams, each font with a
``/ToUnicode`` CMap; this reads those maps and the text operators of every page stream.
No PDF library is needed for that much.
"""

from __future__ import annotations

import re
import zlib

_OBJ = re.compile(rb"(\d+) 0 obj(.*?)endobj", re.S)
_STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.S)


def _objects(pdf: bytes) -> dict[int, bytes]:
    return {int(m.group(1)): m.group(2) for m in _OBJ.finditer(pdf)}


def _stream(body: bytes) -> bytes:
    found = _STREAM.search(body)
    if not found:
        return b""
    try:
        return zlib.decompress(found.group(1))
    except zlib.error:
        return found.group(1)


def _cmap(text: bytes) -> dict[int, str]:
    out: dict[int, str] = {}
    for block in re.findall(rb"beginbfchar(.*?)endbfchar", text, re.S):
        for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            out[int(src, 16)] = bytes.fromhex(dst.decode()).decode("utf-16-be")
    for block in re.findall(rb"beginbfrange(.*?)endbfrange", text, re.S):
        for lo, hi, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            base = int(dst, 16)
            for i, code in enumerate(range(int(lo, 16), int(hi, 16) + 1)):
                out[code] = chr(base + i)
    return out


def pdf_text(pdf: bytes) -> str:
    """Every shown string of every content stream, decoded through its font's ToUnicode."""
    objects = _objects(pdf)
    fonts: dict[bytes, dict[int, str]] = {}  # resource name -> glyph map
    for body in objects.values():
        for name, ref in re.findall(rb"/(F\d+)\s+(\d+) 0 R", body):
            font = objects.get(int(ref), b"")
            uni = re.search(rb"/ToUnicode\s+(\d+) 0 R", font)
            if uni:
                fonts[name] = _cmap(_stream(objects.get(int(uni.group(1)), b"")))
    words: list[str] = []
    for body in objects.values():
        content = _stream(body)
        if b"Tj" not in content and b"TJ" not in content:
            continue
        current: dict[int, str] = {}
        for token in re.finditer(rb"/(F\d+)\s+[\d.]+\s+Tf|<([0-9A-Fa-f]*)>\s*Tj|\[(.*?)\]\s*TJ",
                                 content, re.S):
            if token.group(1):
                current = fonts.get(token.group(1), {})
                continue
            hexes = [token.group(2)] if token.group(2) is not None else re.findall(
                rb"<([0-9A-Fa-f]*)>", token.group(3))
            text = ""
            for chunk in hexes:
                codes = bytes.fromhex(chunk.decode())
                text += "".join(current.get(int.from_bytes(codes[i:i + 2], "big"), "")
                                for i in range(0, len(codes), 2))
            words.append(text)
        words.append("\n")
    return " ".join(words)
