mkdir sub
cat input.txt > sub/a
mv sub/a sub/b
ln -s b sub/l
rm sub/b
python3 -c '
import os, threading
def w(name):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(3):
        os.pwrite(fd, b"x" * 4096, i * 4096)
        os.fsync(fd)
    os.close(fd)
ts = [threading.Thread(target=w, args=(f"sub/t{i}",)) for i in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
os.stat("/etc/hostname")
'
