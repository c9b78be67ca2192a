#define _GNU_SOURCE
#include <blake3.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
static unsigned char *buf;
static double hash_file(const char *p, int mem){
  blake3_hasher h; uint8_t out[32]; struct stat st; int fd=open(p,O_RDONLY); fstat(fd,&st);
  double t=now(); blake3_hasher_init(&h);
  if(mem){ void*m=mmap(NULL,st.st_size,PROT_READ,MAP_SHARED,fd,0); blake3_hasher_update(&h,m,st.st_size); munmap(m,st.st_size);}
  else { ssize_t n=pread(fd,buf,st.st_size,0); blake3_hasher_update(&h,buf,n);}
  blake3_hasher_finalize(&h,out,32); t=now()-t; close(fd); return t;}
int main(int argc,char**argv){ int pairs=(argc-1)/2; double r[4096]; buf=aligned_alloc(4096,4<<20); memset(buf,0,4<<20);
  for(int i=0;i<pairs;i++){ int first=i&1; double a,b;
    if(first){ b=hash_file(argv[1+2*i],1); a=hash_file(argv[2+2*i],0);} else { a=hash_file(argv[1+2*i],0); b=hash_file(argv[2+2*i],1);}
    r[i]=a/b; }
  qsort(r,pairs,sizeof(double),cmp); printf("pairs %d ring/memory median %.3f [%.3f %.3f]\n",pairs,r[pairs/2],r[pairs/5],r[pairs-1-pairs/5]); }
