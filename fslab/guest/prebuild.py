"""Build the guest image ahead of need: `python -m fslab.guest.prebuild [--needed|--abandon]`.

./run-tests starts it in the background at idle priority, so a fresh machine builds the
image (Debian kernel, rootfs, OpenZFS module: about 10 minutes) while the host tests run;
the guest tests come last and wait for it on the image's lock (fslab/guest/image.py).

    (no option)  build the image for the current ingredients unless it is built
    --needed     exit 0 if this host can run guests and the image is not built yet
    --abandon    remove what a killed build left (its chroot mounts first); a build
                 still holding its lock is left alone
"""
from __future__ import annotations

import fcntl
import sys

from fslab.guest import capable
from fslab.guest.image import remove_build_dir, cached_image, ensure_image
from fslab.guest.paths import cache_root


def abandon() -> list[str]:
    removed = []
    root = cache_root()
    for tmp in sorted(root.glob("*.tmp")) if root.exists() else []:
        with open(root / f"{tmp.name[:-len('.tmp')]}.lock", "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue   # a build is still running there
            remove_build_dir(tmp)
            removed.append(str(tmp))
    return removed


def main(argv: list[str]) -> int:
    if "--needed" in argv:
        return 0 if capable() is None and cached_image() is None else 1
    if "--abandon" in argv:
        for path in abandon():
            print(f"removed the unfinished guest image build {path}")
        return 0
    image = ensure_image(log=lambda m: print(f"[image] {m}", flush=True))
    print(f"[image] ready: {image.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
