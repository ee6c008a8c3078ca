#!/usr/bin/env python3
"""Checks that lib's folders form a strict stack: a file under lib/<folder>
includes only headers of its own folder's floor or of the floors below it.

    check_include_floors.py [LIB_DIR]

The floors, top to bottom, are FLOORS below (README.md's layout section
says the same). An include of "<folder>/<file>.h" whose folder is on a
higher floor is printed as FILE:LINE: <folder> (floor N) includes <folder>
(floor M); the exit status is 1 when there is any, or when a folder under
lib is on no floor. System headers and snn.h are not lib's folders.

Every call of the operating system (files, threads, dynamic loading, CPU
features, aligned memory) lives in lib/platform: a header of the system's
interfaces (OS_HEADERS: <unistd.h>, <pthread.h>, <windows.h>, <sys/...>)
included by a file outside it is printed as FILE:LINE: <header> is an OS
header outside lib/platform, and counts as a problem too.
"""
import os
import re
import sys

FLOORS = [
    ["api"],             # the C boundary
    ["engine"],          # orchestration: caches, passes, registries, files
    ["cpu", "device"],   # the CPU backend and the GPU plugin loader
    ["model", "onnx"],   # model files, parameter initialisation; ONNX export and import
    ["ops"],             # op descriptors and the spec parser
    ["core"],            # the shared vocabulary: math, backend seam, lists
    ["common"],          # errors, buffers, the log
    ["platform"],        # every OS call: files, threads, dynamic loading, CPU features, memory
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_0-9]+)/[^"]+"')
OS_HEADERS = re.compile(r'^\s*#\s*include\s+<((?:sys|arpa|netinet)/[^>]+|(?:unistd|fcntl|dlfcn|link|pthread|dirent|'
                        r'sched|semaphore|spawn|termios|poll|windows|winbase|bcrypt|process|io|direct|malloc)\.h)>')
PLATFORM = "platform"


def floor_of():
    return {folder: level for level, folders in enumerate(FLOORS) for folder in folders}


def check(lib):
    floors = floor_of()
    problems = []
    for folder in sorted(os.listdir(lib)):
        if not os.path.isdir(os.path.join(lib, folder)):
            continue
        if folder not in floors:
            problems.append("lib/%s is on no floor (add it to FLOORS and README.md)" % folder)
            continue
        for root, _, names in os.walk(os.path.join(lib, folder)):
            for name in sorted(names):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        os_header = OS_HEADERS.match(line)
                        if os_header and folder != PLATFORM:
                            problems.append("%s:%d: <%s> is an OS header outside lib/platform" % (
                                os.path.relpath(path, os.path.dirname(lib)), number, os_header.group(1)))
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in floors:
                            continue
                        target = m.group(1)
                        if floors[target] < floors[folder]:
                            problems.append("%s:%d: %s (floor %d) includes %s (floor %d)" % (
                                os.path.relpath(path, os.path.dirname(lib)), number, folder,
                                floors[folder] + 1, target, floors[target] + 1))
    return problems


def main(argv):
    lib = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")
    problems = check(os.path.normpath(lib))
    for p in problems:
        print(p)
    print("%d problem%s (upward includes, OS headers outside lib/platform)" % (
        len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
