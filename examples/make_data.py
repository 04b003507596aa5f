#!/usr/bin/python3
"""Write the data of the examples as CSV files (examples/data/), from Debian packages.

  digits.csv  the UCI handwritten digits that python3-sklearn ships (1797 images
              of 8 x 8 pixels, values 0..16): id, label, part, pixels.  part is a
              fixed 80/20 split within each class (every fifth image of a class is
              'test'); 'few' marks the first 15 training images of each class (the
              small-data regime).
  video.csv   a short clip built from scikit-image's "camera" photograph
              (python3-skimage): the photograph, shrunk to 48 x 64 pixels, is the
              background of 24 frames; a bright disc crosses it from left to right
              and a dark square from right to left, lower down.  frame, row, pixels (0..255, one image
              row of 64 values); each frame is a client of the video example and
              its rows are that client's observations (the paper's video setting).

The files are committed, so the examples and their CI checks need neither
package; run this only to rebuild them:

    /usr/bin/python3 examples/make_data.py
"""
import csv
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
FEW = 15
FRAMES, H, W = 24, 48, 64


def write(name, header, rows):
    with open(os.path.join(OUT, name), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def ints(v):
    return "{" + ",".join(str(int(round(x))) for x in v) + "}"


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    rows, seen, trained = [], {}, {}
    for i, (x, y) in enumerate(zip(d.data, d.target)):
        k = seen.get(int(y), 0)
        seen[int(y)] = k + 1
        part = "test" if k % 5 == 4 else "train"
        few = part == "train" and trained.get(int(y), 0) < FEW
        if part == "train":
            trained[int(y)] = trained.get(int(y), 0) + 1
        rows.append([i + 1, int(y), part, "true" if few else "false", ints(x)])
    write("digits.csv", ["id", "label", "part", "few", "pixels"], rows)


def background():
    from skimage import data
    img = data.camera().astype(float)          # 512 x 512, uint8
    img = img[64:448, :]                       # 384 x 512: 8 x 8 blocks give 48 x 64
    return img.reshape(H, 8, W, 8).mean(axis=(1, 3))


def video():
    bg = background()
    yy, xx = np.mgrid[0:H, 0:W]
    rows = []
    for t in range(FRAMES):
        f = bg.copy()
        cx, cy = 4 + t * (W - 8) / (FRAMES - 1), 16      # disc, left to right
        f[(xx - cx) ** 2 + (yy - cy) ** 2 <= 20] = 255
        sx = W - 10 - 2 * t                              # square, right to left
        f[34:40, sx:sx + 6] = 0
        for r in range(H):
            rows.append([t + 1, r + 1, ints(f[r])])
    write("video.csv", ["frame", "row", "pixels"], rows)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    digits()
    video()
