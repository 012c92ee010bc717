"""The qemu guest target: filesystems the host kernel lacks (f2fs, jfs, reiserfs, nilfs2)
and tests that need device-mapper (crash consistency), run by fslab itself inside a
Debian guest. See docs/guest.md.

Entry points:
    run_in_guest(plan, store, run_id, console)   run a whole plan in one guest, merge results
    ensure_image(log)                            build (once) or reuse the cached image
    describe()                                   facts for `fslab doctor`
    HOST_PACKAGES                                Debian packages the host needs for guests
"""
from fslab.guest.image import HOST_PACKAGES, GUEST_PACKAGES, ensure_image, cached_image  # noqa: F401
