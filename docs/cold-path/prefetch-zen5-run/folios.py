"""folios.py FILE MIB: for each of the file's first MIB MiB, its 4K pages in small folios (s) and the
large folios that start there (h), from /proc/self/pagemap and /proc/kpageflags (root)."""
import mmap, os, struct, sys
path, mib = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY); n = mib << 20
m = mmap.mmap(fd, n, prot=mmap.PROT_READ)
for off in range(0, n, 4096): m[off]
# the mapping's address, from /proc/self/maps
for line in open('/proc/self/maps'):
    if path.split('/')[-1] in line:
        start = int(line.split('-')[0], 16); break
pm = open('/proc/self/pagemap', 'rb'); kf = open('/proc/kpageflags', 'rb')
runs = []
for i in range(n // 4096):
    pm.seek(((start >> 12) + i) * 8); e = struct.unpack('Q', pm.read(8))[0]
    pfn = e & ((1 << 55) - 1)
    kf.seek(pfn * 8); f = struct.unpack('Q', kf.read(8))[0]
    head, tail, thp = f >> 15 & 1, f >> 16 & 1, f >> 22 & 1
    runs.append('H' if head else 'T' if tail else 's')
# summarise per MiB: count of small pages, heads
for mb in range(mib):
    seg = runs[mb*256:(mb+1)*256]
    print(f"{mb}:{seg.count('s')}s/{seg.count('H')}h", end='  ')
print()
