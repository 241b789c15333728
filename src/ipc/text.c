/*
 * text.c - free text that always validates: what goes into ERROR's
 * message or a reason may come from anywhere (a library's message that
 * quotes a peer's bytes, cut in the middle of a character); it is sent as
 * printable UTF-8 of at most 1024 bytes.
 */
#include <string.h>

#include "ipc/ipc_internal.h"
#include "tensile/ipc.h"

/* The length of the valid UTF-8 sequence at p (p[0..avail)), 0 if none. */
static size_t utf8_seq(const unsigned char *p, size_t avail) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;      /* no overlong form */
        else if (c == 0xed) hi = 0x9f; /* no surrogate */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        else if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
    } else return 0;
    if (avail < n || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return n;
}

size_t tsl__ipc_clean(char *dst, size_t n, const char *src, size_t len) {
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0, i = 0;
    while (i < len) {
        size_t k = utf8_seq(p + i, len - i);
        if (o + (k ? k : 1) > n - 1) break;
        if (k == 0) dst[o++] = '?';
        else if (k == 1 && (p[i] < 0x20 || p[i] == 0x7f)) dst[o++] = ' ';
        else {
            memcpy(dst + o, p + i, k);
            o += k;
        }
        i += k ? k : 1;
    }
    dst[o] = '\0';
    return o;
}

json_t *tsl_msg_text(const char *s) {
    char buf[TSL__IPC_TEXT_MAX + 1];
    size_t n = s ? tsl__ipc_clean(buf, sizeof buf, s, strlen(s)) : 0;
    return n ? json_stringn(buf, n) : json_string("(none)");
}
