"""Checks that every Meson option a message of the CUDA plugin tells users
to set ("rebuild snn with -D<name>=...") is an option of meson_options.txt.

    check_build_options.py SOURCE_ROOT
"""
import pathlib
import re
import sys


def main(root):
    root = pathlib.Path(root)
    options = set(re.findall(r"option\('([A-Za-z0-9_]+)'", (root / "meson_options.txt").read_text()))
    named = []
    for source in sorted((root / "cuda").glob("*.c*")):
        for name in re.findall(r"-D([A-Za-z0-9_]+)=", source.read_text()):
            named.append((source.name, name))
    if not named:
        print("no message of cuda/ names a build option")
        return 1
    unknown = [(f, n) for f, n in named if n not in options]
    for f, n in unknown:
        print("%s tells users to set -D%s, which meson_options.txt does not define" % (f, n))
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
