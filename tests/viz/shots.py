#!/usr/bin/python3
"""Pixel checks of Chromium screenshots of bufplan's pictures (tests/cli/viz_shots.sh).

    shots.py svg PICTURE.svg SHOT.png     the SVG timeline, rendered at 1:1
    shots.py html SHOT.png DATA.json      the HTML page (DATA: the page's bp-data JSON)
    shots.py decode SHOT.png              prints "W H colours" (a smoke test)

What is checked: the legend swatches are drawn in their colours and are
pairwise distinct (CIE76 distance at least MIN_DE in the rendered pixels);
the peak marker is a solid run of near-black pixels down the plot, in its
place (at the last step here, so against the right edge), and its colour is
distinct from every legend colour.  PNG decoding is done here with zlib
(8-bit RGB or RGBA, non-interlaced: what Chromium writes)."""
import json, math, re, struct, sys, zlib

MIN_DE = 20.0


def decode(path):
    """(width, height, rows): rows[y] is a bytes object of RGB triples."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path + ": not a PNG"
    pos, idat, w, h, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and not interlace, "unexpected PNG format"
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    prev, rows = bytearray(stride), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rows.append(bytes(line) if bpp == 3 else bytes(v for k, v in enumerate(line) if k % 4 != 3))
    return w, h, rows


def px(rows, x, y):
    r = rows[y]
    return tuple(r[3 * x:3 * x + 3])


def hexrgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def lab(c):
    def lin(v):
        v /= 255
        return ((v + 0.055) / 1.055) ** 2.4 if v > 0.04045 else v / 12.92
    r, g, b = (lin(v) for v in c)
    X, Y, Z = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    t = lambda v: v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116
    return 116 * t(Y) - 16, 500 * (t(X) - t(Y)), 200 * (t(Y) - t(Z))


def de(a, b):
    return math.dist(lab(a), lab(b))


def near(a, b, tol=8):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def dark(c):
    return max(c) < 70


def check_distinct(colours, what):
    pairs = [(de(a, b), i, j) for i, a in enumerate(colours) for j, b in enumerate(colours) if i < j]
    if pairs:
        d, i, j = min(pairs)
        assert d >= MIN_DE, "%s: legend colours %d %s and %d %s are %.1f apart (at least %.0f wanted)" % (
            what, i, colours[i], j, colours[j], d, MIN_DE)
    black = (0, 0, 0)
    for c in colours:
        assert de(c, black) >= MIN_DE, "%s: legend colour %s is too close to the peak marker's black" % (what, c)


def longest_dark_run(rows, x, y0, y1):
    best = cur = 0
    for y in range(y0, y1):
        cur = cur + 1 if dark(px(rows, x, y)) else 0
        best = max(best, cur)
    return best


def check_svg(svg_path, png_path):
    svg = open(svg_path, encoding="utf-8").read()
    w, h, rows = decode(png_path)
    sw = re.findall(r'<path (?:class="swatch" )?d="M([\d.]+) ([\d.]+)h10v10h-10Z" fill="(#[0-9a-f]{6})"', svg)
    assert len(sw) >= 6, "the SVG has %d legend swatches" % len(sw)
    got = []
    for x, y, fill in sw:
        c = px(rows, int(float(x)) + 5, int(float(y)) + 5)
        assert near(c, hexrgb(fill)), "swatch %s at (%s, %s) renders as %s" % (fill, x, y, c)
        got.append(c)
    check_distinct(got, "svg")
    frame = re.search(r'<path d="M([\d.]+) ([\d.]+)H([\d.]+)V([\d.]+)H[\d.]+Z" fill="#fafafa"', svg)
    L, top, right, bottom = (float(v) for v in frame.groups())
    m = re.search(r'<path (?:class="peak" )?d="M([\d.]+) ([\d.]+)V([\d.]+)" stroke="#(?:000000|e67e22)"', svg)
    assert m, "the SVG has no peak marker"
    x, y0, y1 = float(m.group(1)), int(float(m.group(2))), int(float(m.group(3)))
    assert L < x < right, "the peak marker at x=%.1f is outside the plot [%.0f, %.0f]" % (x, L, right)
    assert x > L + 0.95 * (right - L), "the peak is at the last step, but the marker is %.1f px from the right edge" % (right - x)
    run = max(longest_dark_run(rows, xx, y0, y1) for xx in (int(x) - 1, int(x), int(x) + 1))
    assert run >= 0.9 * (y1 - y0), "the peak marker: %d of %d pixels drawn" % (run, y1 - y0)
    print("svg: %d legend colours, pairwise distinct; peak marker %d px long at x=%.1f (plot ends at %.0f)" % (len(got), run, x, right))


def components(rows, w, h, colour, y_max):
    """Bounding boxes of 4-connected runs of pixels near colour, in rows < y_max."""
    seen, boxes = set(), []
    for y in range(min(h, y_max)):
        for x in range(w):
            if (x, y) in seen or not near(px(rows, x, y), colour, 4):
                continue
            stack, x0, x1, y0, y1 = [(x, y)], x, x, y, y
            seen.add((x, y))
            while stack and len(seen) < 10 ** 6:
                cx, cy = stack.pop()
                x0, x1, y0, y1 = min(x0, cx), max(x1, cx), min(y0, cy), max(y1, cy)
                for nx, ny in ((cx + 1, cy), (cx - 1, cy), (cx, cy + 1), (cx, cy - 1)):
                    if 0 <= nx < w and 0 <= ny < min(h, y_max) and (nx, ny) not in seen and near(px(rows, nx, ny), colour, 4):
                        seen.add((nx, ny))
                        stack.append((nx, ny))
            boxes.append((x0, y0, x1 - x0 + 1, y1 - y0 + 1))
    return boxes


def check_html(png_path, data_path):
    D = json.load(open(data_path, encoding="utf-8"))
    w, h, rows = decode(png_path)
    pal, col, order = D["palette"], D["type_color"], D["type_order"]
    want = [hexrgb(pal[col[k]]) for k in order[:len(pal) - 1]]
    check_distinct(want, "html palette")
    # the legend sits above the timeline: a swatch is a 10x10 block of its colour
    ys = []
    for c in want:
        boxes = [b for b in components(rows, w, h, c, 260) if 8 <= b[2] <= 12 and 8 <= b[3] <= 12]
        assert boxes, "the legend swatch %s is not in the screenshot" % (c,)
        ys.append(boxes[0][1])
    assert max(ys) - min(ys) <= 20, "the legend swatches are not in one place: rows %s" % ys
    # the peak marker: a long run of black down the timeline, near its right edge
    runs = [(longest_dark_run(rows, x, 0, h), x) for x in range(w // 2, w)]
    run, x = max(runs)
    assert run >= 300, "no peak marker: the longest black run down the page is %d px (x=%d)" % (run, x)
    assert x > 0.85 * w, "the peak is at the last step, but the marker is at x=%d of %d" % (x, w)
    print("html: %d legend swatches in one row, pairwise distinct; peak marker %d px long at x=%d of %d" % (len(want), run, x, w))


if __name__ == "__main__":
    if sys.argv[1] == "svg":
        check_svg(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "html":
        check_html(sys.argv[2], sys.argv[3])
    else:
        w, h, rows = decode(sys.argv[2])
        print(w, h, len({px(rows, x, y) for y in range(0, h, 3) for x in range(0, w, 3)}))
