#!/usr/bin/env python3
"""Prints the dominant colour of a PNG screenshot: `#rrggbb fraction`, the colour most pixels
have and the share of pixels that have it. Standard library only (zlib); 8-bit RGB or RGBA,
non-interlaced, as Chromium writes them. With colours after the file, a line `#rrggbb fraction`
follows for each: the share of pixels that have exactly it.
Usage: png_colours.py FILE.png [#rrggbb ...]"""
import struct
import sys
import zlib
from collections import Counter
from itertools import accumulate


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    offset, idat, header = 8, b"", None
    while offset + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(idat)
    rows, previous, position = [], bytes(stride), 0
    low = int.from_bytes(b"\x7f" * stride, "big")
    high = int.from_bytes(b"\x80" * stride, "big")
    for _ in range(height):
        kind = raw[position]
        line = raw[position + 1:position + 1 + stride]
        position += 1 + stride
        if kind == 2:
            # Up: bytewise addition modulo 256 of two whole rows at once, without carries between
            # bytes (the high bits are added by exclusive or).
            a, b = int.from_bytes(line, "big"), int.from_bytes(previous, "big")
            line = (((a & low) + (b & low)) ^ ((a ^ b) & high)).to_bytes(stride, "big")
        elif kind == 1:
            out = bytearray(line)
            for c in range(channels):
                out[c::channels] = bytes(v & 0xFF for v in accumulate(line[c::channels]))
            line = bytes(out)
        elif kind in (3, 4):
            out = bytearray(line)
            for i in range(stride):
                left = out[i - channels] if i >= channels else 0
                up = previous[i]
                if kind == 3:
                    out[i] = (out[i] + (left + up) // 2) & 0xFF
                    continue
                upper_left = previous[i - channels] if i >= channels else 0
                p = left + up - upper_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else upper_left)
                out[i] = (out[i] + predictor) & 0xFF
            line = bytes(out)
        rows.append(line)
        previous = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = decode(sys.argv[1])
    counts = Counter()
    for row in rows:
        counts.update(zip(row[0::channels], row[1::channels], row[2::channels]))
    colour, count = counts.most_common(1)[0]
    print("#%02x%02x%02x %.4f" % (colour[0], colour[1], colour[2], count / (width * height)))
    for wanted in sys.argv[2:]:
        rgb = tuple(int(wanted[i:i + 2], 16) for i in (1, 3, 5))
        print("%s %.4f" % (wanted, counts[rgb] / (width * height)))


if __name__ == "__main__":
    main()
