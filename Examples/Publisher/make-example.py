#!/usr/bin/env python3
"""Generates the bundled publisher folder: one zipped issue with a cover, its catalog and checksums.

Run once (the output is committed, so `scripts/example` needs no server and no Python):
    python3 Examples/Publisher/make-example.py
The output is byte-for-byte reproducible: fixed timestamps, fixed content.
"""
import hashlib
import io
import json
import os
import struct
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ISSUE = "2026-11-21"


def png(width, height, pixel):
    """A minimal RGB PNG; pixel(x, y) -> (r, g, b)."""
    rows = b"".join(b"\x00" + bytes(c for x in range(width) for c in pixel(x, y)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def pdf(lines):
    """A one-page PDF showing `lines` in Helvetica."""
    text = "BT /F1 18 Tf 72 720 Td 24 TL " + " ".join("(%s) '" % line for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        "<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(("%d 0 obj\n%s\nendobj\n" % (number, body)).encode())
    xref = out.tell()
    out.write(("xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)).encode())
    for offset in offsets:
        out.write(("%010d 00000 n \n" % offset).encode())
    out.write(("trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)).encode())
    return out.getvalue()


def zipped(files):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(2026, 11, 21, 6, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return out.getvalue()


def write(relative, data):
    path = os.path.join(HERE, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    return hashlib.sha256(data).hexdigest(), len(data)


cover = png(60, 80, lambda x, y: (200 - y, 40 + x * 2, 120 if 10 <= y < 22 else 60))
issue = zipped([
    ("magazine.pdf", pdf(["The Paperboy Gazette", "Issue of 21 November 2026", "", "Delivered by a config file."])),
    ("articles/welcome.txt", b"Welcome to the first issue of the Paperboy Gazette.\n"),
    ("index.json", json.dumps({"title": "The Paperboy Gazette", "pages": ["magazine.pdf"]}, indent=2).encode() + b"\n"),
])

cover_sha, cover_size = write("covers/%s.png" % ISSUE, cover)
issue_sha, issue_size = write("issues/%s.zip" % ISSUE, issue)
catalog = {
    "issues": [{
        "name": ISSUE,
        "date": ISSUE,
        "title": "The Paperboy Gazette, 21 November 2026",
        "cover": {"url": "covers/%s.png" % ISSUE, "sha256": cover_sha, "size": cover_size, "path": "cover.png"},
        "assets": [{"url": "issues/%s.zip" % ISSUE, "sha256": issue_sha, "size": issue_size, "unpack": "zip"}],
    }],
}
write("catalog.json", (json.dumps(catalog, indent=2) + "\n").encode())
write("SHA256SUMS", ("%s  covers/%s.png\n%s  issues/%s.zip\n" % (cover_sha, ISSUE, issue_sha, ISSUE)).encode())
print("wrote catalog.json, SHA256SUMS, covers/%s.png (%d bytes), issues/%s.zip (%d bytes)" % (ISSUE, cover_size, ISSUE, issue_size))
