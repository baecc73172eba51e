#!/usr/bin/env python3
"""Synthetic images for the example net: N grayscale 8x8 PGM images of 4 classes (a bright quadrant per
class, plus noise), and their list files for Caffe's ImageData layer. Standard library only.

    python3 make_data.py DIR [--train 64] [--test 16] [--size 8] [--seed 1]

writes DIR/images/*.pgm, DIR/train.txt and DIR/test.txt ("images/NAME LABEL" lines; the nets take
paths relative to the working directory, so run caffe in DIR).
"""
import argparse
import os
import random


def image(label, size, rng):
    half = size // 2
    rows = []
    for y in range(size):
        row = bytearray()
        for x in range(size):
            quadrant = (y >= half) * 2 + (x >= half)
            base = 200 if quadrant == label else 40
            row.append(max(0, min(255, base + int(rng.gauss(0, 30)))))
        rows.append(bytes(row))
    return b"P5\n%d %d\n255\n" % (size, size) + b"".join(rows)


def write_set(directory, name, count, size, rng):
    lines = []
    for i in range(count):
        label = rng.randrange(4)
        path = os.path.join("images", "%s_%04d.pgm" % (name, i))
        with open(os.path.join(directory, path), "wb") as f:
            f.write(image(label, size, rng))
        lines.append("%s %d\n" % (path, label))
    with open(os.path.join(directory, name + ".txt"), "w") as f:
        f.writelines(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--train", type=int, default=64)
    parser.add_argument("--test", type=int, default=16)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(os.path.join(args.directory, "images"), exist_ok=True)
    rng = random.Random(args.seed)
    write_set(args.directory, "train", args.train, args.size, rng)
    write_set(args.directory, "test", args.test, args.size, rng)


if __name__ == "__main__":
    main()
