"""THREADS threads, each writing FILES files of SIZE bytes in its own directory, each file
fsync'd and closed: fd numbers are reused across threads as fast as the kernel can."""
import os
import sys
import threading

threads, files, size = (int(a) for a in sys.argv[1:4])
data = os.urandom(size)


def work(t: int) -> None:
    os.mkdir(f"t{t}")
    for i in range(files):
        fd = os.open(f"t{t}/f{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)


workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
