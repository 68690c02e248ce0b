/* Causal multi-head attention for the toys' training, forward and backward, on one CPU thread.
 *
 * For each sequence b and head h, with queries q_i, keys k_j, values v_j (rows of qkv):
 *
 *     s_ij = <q_i, k_j> / sqrt(K) - m_h (i - j)          (j <= i; m_h = 0 but for ALiBi)
 *     P_ij = exp(s_ij - max_j s_ij) / l_i,   l_i = sum_j exp(s_ij - max_j s_ij)
 *     z_i  = sum_j P_ij v_j
 *
 * with RoPE's rotate-half turn applied to q_i and k_j at positions i and j first. The backward
 * pass recomputes P from the saved row maxima and normalisers (the flash-attention scheme) and
 * gives dq, dk, dv in qkv's own layout, so a training step needs no copy or concatenation
 * around the kernel.
 *
 * Why a kernel of our own: PyTorch's fused CPU kernel runs a toy's small heads (K = 16,
 * n = 128) at a fraction of the core's arithmetic rate, and attention was about half of a
 * training step (benchmarks/bench_toy_step.py). Here a block of 8 queries meets 8 keys at a
 * time, every product of the tile in registers, and a sequence's heads are read and written
 * row by row, in memory order.
 *
 * Why the same bits on every machine: every operation is an IEEE single-precision add,
 * multiply, divide or fused multiply-add (fma8: one rounding, as the standard defines it) in
 * an order fixed by this source (sums run in the order written; the vector types below are
 * element-wise), the exponential is a polynomial of such operations, and the library is
 * compiled with -ffp-contract=off and without -ffast-math, so no compiler may fuse or reorder
 * anything else. AVX2 with FMA, plain SSE with the C library's fmaf, or NEON give the same
 * results (qkcore/tests/test_causal_attention.py builds two and compares them).
 */
#include <stdlib.h>
#include <string.h>

typedef float f8 __attribute__((vector_size(32)));
typedef int i8 __attribute__((vector_size(32)));
enum { W = 8 }; /* lanes of a vector, and rows of a query block */

/* What one call attends over; mirrors _Attention in causal_attention.py. */
typedef struct {
    int B, n, H, K;        /* sequences, positions, heads, head dimension */
    const float *qkv;      /* [B, n, 3, H, K], contiguous */
    const float *slopes;   /* ALiBi's [H] slopes, or NULL */
    const float *cos_sin;  /* RoPE's [n, 2, K/2] cos and sin tables, or NULL */
    float scale;           /* 1 / sqrt(K) */
} qk_attention;

static inline f8 splat(float x) { return (f8){x, x, x, x, x, x, x, x}; }

/* a * b + c rounded once (IEEE 754's fused multiply-add: one correctly rounded result, so the
 * same bits from the instruction, from NEON's, or from the C library's software fmaf). Only
 * where written: the compiler may not fuse anything else (-ffp-contract=off). */
static inline f8 fma8(f8 a, f8 b, f8 c) {
#if defined(__FMA__) && defined(__AVX__)
    return __builtin_ia32_vfmaddps256(a, b, c);
#else
    f8 r;
    for (int l = 0; l < W; l++) r[l] = __builtin_fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

static inline f8 vmax(f8 a, f8 b) {
    i8 take_a = a > b;
    return (f8)(((i8)a & take_a) | ((i8)b & ~take_a));
}

/* e^x for x <= 0: x = n ln2 + r by Cody and Waite's two-part ln2, e^r by Cephes' expf
 * polynomial (about 1 ulp), 2^n written into the exponent. Below -87 the result is held at
 * e^-87 (1.6e-38), which no softmax row can tell from 0: its largest term is 1. */
static inline f8 exp_nonpositive(f8 x) {
    x = vmax(x, splat(-87.0f));
    const f8 round = splat(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
    f8 t = x * splat(1.44269504088896341f) + round;
    i8 n = (i8)t - (i8)round;
    f8 nf = t - round;
    f8 r = fma8(-nf, splat(0.693359375f), x);
    r = fma8(-nf, splat(-2.12194440e-4f), r);
    f8 y = splat(1.9875691500e-4f);
    y = fma8(y, r, splat(1.3981999507e-3f));
    y = fma8(y, r, splat(8.3334519073e-3f));
    y = fma8(y, r, splat(4.1665795894e-2f));
    y = fma8(y, r, splat(1.6666665459e-1f));
    y = fma8(y, r, splat(5.0000001201e-1f));
    y = fma8(y, r * r, r) + splat(1.0f);
    return y * (f8)((n + 127) << 23);
}

/* v with lanes r + 1.. (keys past query r of a diagonal tile) set to x - a blend, not stores
 * into the vector's lanes, which would stall the next load of it */
static inline f8 past_diagonal(f8 v, int r, float x) {
    const i8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
    i8 past = lane > (i8){r, r, r, r, r, r, r, r};
    return (f8)(((i8)v & ~past) | ((i8)splat(x) & past));
}

static inline f8 load(const float *p) {
    f8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store(float *p, f8 v) { memcpy(p, &v, sizeof v); }

/* One head's operands for one sequence, zero-padded to n8 positions and Kp dimensions (both
 * multiples of W): row-major [n8][Kp] unless said otherwise. */
typedef struct {
    float *Q;        /* queries, turned and scaled */
    float *Kr, *Vr;  /* keys (turned) and values */
    f8 *Kt, *Vt;     /* the same, transposed: [Kp][n8 / W] */
    float *Z;        /* forward: the output; backward: the output gradient dz */
    float *D;        /* backward: [n8] D_i = <dz_i, z_i> */
    float *dQ, *dK, *dV;
    f8 *bias;        /* ALiBi: [n8 / W][W] m_h (i - j) by (row block - key vector, row) */
} head;

typedef struct {
    int n8, nv, Kp;
    head *heads;     /* [H] */
    f8 *S, *T;       /* [W][nv]: a row block's scores or P, and dP or dS */
    float *X;        /* [W][Kp]: a row block's products with V or K */
} work;

/* Zeroed scratch, 64-byte aligned, each block starting at another of 15 offsets within the
 * page: arrays read side by side (Q, K, V and their transposes; a product's three operands)
 * would otherwise all start at the same place in a page and evict each other from the same
 * sets of the core's caches. Freed with release(). */
static void *zeroed(size_t bytes) {
    static unsigned colour;
    size_t shift = 64 * (1 + colour++ % 15);
    bytes = (bytes + 63) / 64 * 64;
    char *base = aligned_alloc(64, bytes + shift);
    if (!base) return NULL;
    char *p = base + shift;
    memcpy(p - sizeof base, &base, sizeof base);
    memset(p, 0, bytes);
    return p;
}

static void release(void *p) {
    if (p) {
        char *base;
        memcpy(&base, (char *)p - sizeof base, sizeof base);
        free(base);
    }
}

static void work_free(work *w, int H) {
    if (w->heads)
        for (int h = 0; h < H; h++) {
            head *hd = &w->heads[h];
            void *all[] = {hd->Q, hd->Kr, hd->Vr, hd->Kt, hd->Vt, hd->Z,
                           hd->D, hd->dQ, hd->dK, hd->dV, hd->bias};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) release(all[i]);
        }
    free(w->heads);
    release(w->S);
    release(w->T);
    release(w->X);
}

/* Scratch for every head of a sequence (one sequence at a time); 0 if memory ran out. */
static int work_new(work *w, const qk_attention *a, int backward) {
    memset(w, 0, sizeof *w);
    w->n8 = (a->n + W - 1) / W * W;
    w->nv = w->n8 / W;
    w->Kp = (a->K + W - 1) / W * W;
    size_t rows = sizeof(float) * (size_t)w->n8 * w->Kp;
    w->heads = calloc((size_t)a->H, sizeof(head));
    w->S = zeroed(sizeof(f8) * W * w->nv);
    w->T = zeroed(sizeof(f8) * W * w->nv);
    w->X = zeroed(sizeof(float) * W * w->Kp);
    int ok = w->heads && w->S && w->T && w->X;
    for (int h = 0; ok && h < a->H; h++) {
        head *hd = &w->heads[h];
        hd->Q = zeroed(rows);
        hd->Kr = zeroed(rows);
        hd->Vr = zeroed(rows);
        hd->Kt = zeroed(rows);
        hd->Vt = zeroed(rows);
        hd->Z = zeroed(rows);
        ok = hd->Q && hd->Kr && hd->Vr && hd->Kt && hd->Vt && hd->Z;
        if (backward) {
            hd->D = zeroed(sizeof(float) * w->n8);
            hd->dQ = zeroed(rows);
            hd->dK = zeroed(rows);
            hd->dV = zeroed(rows);
            ok = ok && hd->D && hd->dQ && hd->dK && hd->dV;
        }
        if (ok && a->slopes) {
            hd->bias = zeroed(sizeof(f8) * W * w->nv);
            ok = hd->bias != NULL;
            const f8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
            for (int dd = 0; ok && dd < w->nv; dd++)
                for (int r = 0; r < W; r++) /* i - j = W dd + r - lane, exactly */
                    hd->bias[dd * W + r] = splat(a->slopes[h]) * (splat((float)(W * dd + r)) - lane);
        }
    }
    if (!ok) work_free(w, a->H);
    return ok;
}

/* RoPE's rotate-half turn of x at position i: pair (a, b) = (x_c, x_{c + K/2}) becomes
 * (a cos - b sin, b cos + a sin) - as x * [cos, cos] + [-b, a] * [sin, sin], the order in
 * which the analysis path (qkcore.models.toy.model.rotate_queries_keys) computes it. */
static void turn(float *restrict out, const float *restrict x, const float *cos_sin, int i,
                 int K) {
    int half = K / 2;
    const float *c = cos_sin + (size_t)i * K, *s = c + half;
    for (int t = 0; t < half; t++) {
        out[t] = x[t] * c[t] + (-x[t + half]) * s[t];
        out[t + half] = x[t + half] * c[t] + x[t] * s[t];
    }
}

/* The transpose of turn, for gradients: (a, b) -> (a cos + b sin, b cos - a sin). */
static void turn_back(float *restrict out, const float *restrict g, const float *cos_sin, int i,
                      int K) {
    int half = K / 2;
    const float *c = cos_sin + (size_t)i * K, *s = c + half;
    for (int t = 0; t < half; t++) {
        out[t] = g[t] * c[t] + g[t + half] * s[t];
        out[t + half] = g[t + half] * c[t] + (-g[t]) * s[t];
    }
}

/* t[l][k] = r[k][l]: an 8 x 8 block turned in registers (shuffles move bits, exactly). */
static inline void transpose8(f8 t[W], const f8 r[W]) {
    const i8 lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
    const i8 even = {0, 1, 8, 9, 4, 5, 12, 13}, odd = {2, 3, 10, 11, 6, 7, 14, 15};
    const i8 first = {0, 1, 2, 3, 8, 9, 10, 11}, second = {4, 5, 6, 7, 12, 13, 14, 15};
    f8 a[W], b[W];
    for (int k = 0; k < W; k += 2) {
        a[k] = __builtin_shuffle(r[k], r[k + 1], lo);
        a[k + 1] = __builtin_shuffle(r[k], r[k + 1], hi);
    }
    for (int k = 0; k < W; k += 4)
        for (int e = 0; e < 2; e++) {
            b[k + 2 * e] = __builtin_shuffle(a[k + e], a[k + e + 2], even);
            b[k + 2 * e + 1] = __builtin_shuffle(a[k + e], a[k + e + 2], odd);
        }
    for (int k = 0; k < 4; k++) {
        t[k] = __builtin_shuffle(b[k], b[k + 4], first);
        t[k + 4] = __builtin_shuffle(b[k], b[k + 4], second);
    }
}

/* dst [Kp][n8] = src [n8][Kp]^T, by 8 x 8 blocks. */
static void transpose(f8 *dst, const float *src, int n8, int Kp) {
    int nv = n8 / W;
    for (int jb = 0; jb < nv; jb++)
        for (int c0 = 0; c0 < Kp; c0 += W) {
            f8 r[W], t[W];
            for (int k = 0; k < W; k++) r[k] = load(src + (size_t)(jb * W + k) * Kp + c0);
            transpose8(t, r);
            for (int k = 0; k < W; k++) dst[(size_t)(c0 + k) * nv + jb] = t[k];
        }
}

/* Lane r of the result is the largest lane of v[r] (the first of equals), for 8 rows at once. */
static inline f8 max_rows(const f8 v[W]) {
    f8 t[W];
    transpose8(t, v);
    f8 m = t[0];
    for (int l = 1; l < W; l++) m = vmax(t[l], m);
    return m;
}

/* Lane r of the result is the sum of v[r]'s lanes, paired as ((0 + 1) + (2 + 3)) + ((4 + 5) +
 * (6 + 7)), for 8 rows at once. */
static inline f8 sum_rows(const f8 v[W]) {
    f8 t[W];
    transpose8(t, v);
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* Sequence b's queries, keys and values into every head's operands, row by row. */
static void load_sequence(work *w, const qk_attention *a, int b) {
    int H = a->H, K = a->K, Kp = w->Kp;
    for (int j = 0; j < a->n; j++) {
        const float *row = a->qkv + ((size_t)b * a->n + j) * 3 * H * K;
        for (int h = 0; h < H; h++) {
            head *hd = &w->heads[h];
            const float *q = row + (size_t)h * K, *k = row + (size_t)(H + h) * K;
            const float *v = row + (size_t)(2 * H + h) * K;
            float *restrict Qj = hd->Q + (size_t)j * Kp, *restrict Kj = hd->Kr + (size_t)j * Kp;
            float *restrict Vj = hd->Vr + (size_t)j * Kp;
            if (a->cos_sin) {
                turn(Qj, q, a->cos_sin, j, K);
                turn(Kj, k, a->cos_sin, j, K);
                for (int c = 0; c < K; c++) Qj[c] = Qj[c] * a->scale;
            } else {
                for (int c = 0; c < K; c++) {
                    Qj[c] = q[c] * a->scale;
                    Kj[c] = k[c];
                }
            }
            memcpy(Vj, v, sizeof(float) * K);
        }
    }
    for (int h = 0; h < H; h++) {
        transpose(w->heads[h].Kt, w->heads[h].Kr, w->n8, Kp);
        transpose(w->heads[h].Vt, w->heads[h].Vr, w->n8, Kp);
    }
}

/* out[r][u] = sum_c A[r][c] Bt[c][u] for the W rows of A and vectors u = 0..last, summed over
 * c in order. Four rows by two key vectors at a time: eight accumulators, and per c two vector
 * loads and four broadcasts for sixteen products (eight rows by one vector loaded nine times
 * for as many, and loads were the bound). */
static void tiles(f8 *out, int nv, const float *A, int Kp, const f8 *Bt, int last) {
    for (int r0 = 0; r0 < W; r0 += 4) {
        int u = 0;
        for (; u + 1 <= last; u += 2) {
            f8 a0[4], a1[4];
            for (int r = 0; r < 4; r++) a0[r] = a1[r] = splat(0.0f);
            for (int c = 0; c < Kp; c++) {
                f8 b0 = Bt[(size_t)c * nv + u], b1 = Bt[(size_t)c * nv + u + 1];
                for (int r = 0; r < 4; r++) {
                    f8 ar = splat(A[(r0 + r) * Kp + c]);
                    a0[r] = fma8(ar, b0, a0[r]);
                    a1[r] = fma8(ar, b1, a1[r]);
                }
            }
            for (int r = 0; r < 4; r++) {
                out[(r0 + r) * nv + u] = a0[r];
                out[(r0 + r) * nv + u + 1] = a1[r];
            }
        }
        if (u == last) {
            f8 a0[4];
            for (int r = 0; r < 4; r++) a0[r] = splat(0.0f);
            for (int c = 0; c < Kp; c++) {
                f8 b0 = Bt[(size_t)c * nv + u];
                for (int r = 0; r < 4; r++) a0[r] = fma8(splat(A[(r0 + r) * Kp + c]), b0, a0[r]);
            }
            for (int r = 0; r < 4; r++) out[(r0 + r) * nv + u] = a0[r];
        }
    }
}

/* Row block rb's scores: products, ALiBi's bias, and -inf past the diagonal. */
static void scores(work *w, const head *hd, int rb) {
    int nv = w->nv;
    tiles(w->S, nv, hd->Q + (size_t)rb * W * w->Kp, w->Kp, hd->Kt, rb);
    if (hd->bias)
        for (int r = 0; r < W; r++)
            for (int u = 0; u <= rb; u++)
                w->S[r * nv + u] = w->S[r * nv + u] - hd->bias[(rb - u) * W + r];
    for (int r = 0; r < W; r++) w->S[r * nv + rb] = past_diagonal(w->S[r * nv + rb], r, -__builtin_inff());
}

/* Scores -> probabilities exp(s - m_r) * (1 / l_r), exactly 0 past the diagonal. The forward
 * pass (find = 1) finds m and l here; the backward pass gives the forward's, so both passes
 * hold the same P, bit for bit. The block's exponentials are independent of each other: one
 * loop over all of them keeps the pipeline full (a loop per row drained it at every row). */
static void probabilities(work *w, int rb, float *m, float *l, int find) {
    int nv = w->nv;
    f8 maxima, sums, shift[W], part[W];
    if (find) {
        for (int r = 0; r < W; r++) {
            part[r] = w->S[r * nv];
            for (int u = 1; u <= rb; u++) part[r] = vmax(w->S[r * nv + u], part[r]);
        }
        maxima = max_rows(part);
    } else {
        maxima = load(m);
    }
    for (int r = 0; r < W; r++) shift[r] = splat(maxima[r]);
    for (int u = 0; u <= rb; u++)
        for (int r = 0; r < W; r++) w->S[r * nv + u] = exp_nonpositive(w->S[r * nv + u] - shift[r]);
    for (int r = 0; r < W; r++) w->S[r * nv + rb] = past_diagonal(w->S[r * nv + rb], r, 0.0f);
    if (find) {
        for (int r = 0; r < W; r++) {
            part[r] = splat(0.0f);
            for (int u = 0; u <= rb; u++) part[r] += w->S[r * nv + u];
        }
        sums = sum_rows(part);
        store(m, maxima);
        store(l, sums);
    } else {
        sums = load(l);
    }
    f8 inverse = splat(1.0f) / sums;
    for (int r = 0; r < W; r++) {
        f8 scale = splat(inverse[r]);
        for (int u = 0; u <= rb; u++) w->S[r * nv + u] = w->S[r * nv + u] * scale;
    }
}

/* out[r][c] = sum_{j < jend} P[r][j] X[j][c] for the block's W rows: 4 rows by 2W columns of
 * accumulators at a time (eleven vector registers: no spills on AVX2's sixteen). */
static void rows_times(float *out, const f8 *P, int nv, const float *X, int Kp, int jend) {
    const float *p = (const float *)P;
    for (int r0 = 0; r0 < W; r0 += 4)
        for (int c0 = 0; c0 < Kp; c0 += 2 * W) {
            int two = c0 + W < Kp;
            f8 a0[4], a1[4];
            for (int r = 0; r < 4; r++) a0[r] = a1[r] = splat(0.0f);
            for (int j = 0; j < jend; j++) {
                const float *xj = X + (size_t)j * Kp + c0;
                f8 x0 = load(xj), x1 = two ? load(xj + W) : splat(0.0f);
                for (int r = 0; r < 4; r++) {
                    f8 pr = splat(p[(size_t)(r0 + r) * nv * W + j]);
                    a0[r] = fma8(pr, x0, a0[r]);
                    a1[r] = fma8(pr, x1, a1[r]);
                }
            }
            for (int r = 0; r < 4; r++) {
                store(out + (r0 + r) * Kp + c0, a0[r]);
                if (two) store(out + (r0 + r) * Kp + c0 + W, a1[r]);
            }
        }
}

/* acc[j][c] += sum_r P[r][j] Y[r][c] for j < jend (a multiple of 4), rows r in order: the
 * block's W rows of Y held in registers while four independent j run side by side. */
static void add_transposed(float *acc, const f8 *P, int nv, const float *Y, int Kp, int jend) {
    const float *p = (const float *)P;
    for (int c0 = 0; c0 < Kp; c0 += W) {
        f8 y[W];
        for (int r = 0; r < W; r++) y[r] = load(Y + r * Kp + c0);
        for (int j = 0; j < jend; j += 4) {
            f8 s[4];
            for (int e = 0; e < 4; e++) s[e] = load(acc + (size_t)(j + e) * Kp + c0);
            for (int r = 0; r < W; r++)
                for (int e = 0; e < 4; e++) s[e] = fma8(splat(p[(size_t)r * nv * W + j + e]), y[r], s[e]);
            for (int e = 0; e < 4; e++) store(acc + (size_t)(j + e) * Kp + c0, s[e]);
        }
    }
}

static int unsupported(const qk_attention *a) {
    return a->B < 0 || a->n < 1 || a->H < 1 || a->K < 1 || a->K > 256 ||
           (a->cos_sin && a->K % 2);
}

/* One head of one sequence, forward: Z and the rows' statistics (m, l: [n]). */
static void head_forward(work *w, head *hd, int n, float *m_out, float *l_out) {
    for (int rb = 0; rb < w->nv; rb++) {
        float m[W], l[W];
        scores(w, hd, rb);
        probabilities(w, rb, m, l, 1);
        rows_times(hd->Z + (size_t)rb * W * w->Kp, w->S, w->nv, hd->Vr, w->Kp, (rb + 1) * W);
        for (int r = 0; r < W && rb * W + r < n; r++) {
            m_out[rb * W + r] = m[r];
            l_out[rb * W + r] = l[r];
        }
    }
}

/* Sequence b forward, in scratch w: its z rows [n, H, K] of z [B, n, H, K], and its heads'
 * row maxima and normalisers in row_max, row_sum [B, H, n]. */
static void forward_sequence(work *w, const qk_attention *a, int b, float *z, float *row_max,
                             float *row_sum) {
    int H = a->H, K = a->K, n = a->n;
    load_sequence(w, a, b);
    for (int h = 0; h < H; h++) {
        size_t at = ((size_t)b * H + h) * n;
        head_forward(w, &w->heads[h], n, row_max + at, row_sum + at);
    }
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++)
            memcpy(z + (((size_t)b * n + i) * H + h) * K, w->heads[h].Z + (size_t)i * w->Kp,
                   sizeof(float) * K);
}

/* z [B, n, H, K]; the row maxima and normalisers [B, H, n] the backward pass needs.
 * Returns 0, or 1 when memory ran out, 2 for shapes outside the kernel's bounds. */
int qk_causal_attention_forward(const qk_attention *a, float *z, float *row_max, float *row_sum) {
    if (unsupported(a)) return 2;
    work w;
    if (!work_new(&w, a, 0)) return 1;
    for (int b = 0; b < a->B; b++) forward_sequence(&w, a, b, z, row_max, row_sum);
    work_free(&w, a->H);
    return 0;
}

/* Sequence b's output gradients into every head's Z, with D_i = <dz_i, z_i>; the padding
 * rows zero (a forward pass in the same scratch left its outputs there). */
static void load_gradient(work *w, const qk_attention *a, const float *z, const float *dz,
                          int b) {
    int H = a->H, K = a->K;
    for (int h = 0; h < H; h++) {
        head *hd = &w->heads[h];
        size_t rows = (size_t)(w->n8 - a->n);
        memset(hd->Z + (size_t)a->n * w->Kp, 0, sizeof(float) * rows * w->Kp);
        memset(hd->D + a->n, 0, sizeof(float) * rows);
    }
    for (int i = 0; i < a->n; i++)
        for (int h = 0; h < H; h++) {
            size_t at = (((size_t)b * a->n + i) * H + h) * K;
            head *hd = &w->heads[h];
            memcpy(hd->Z + (size_t)i * w->Kp, dz + at, sizeof(float) * K);
            float d = 0.0f;
            for (int c = 0; c < K; c++) d += dz[at + c] * z[at + c];
            hd->D[i] = d;
        }
}

/* One head of one sequence, backward: dQ (unscaled, unturned), dK and dV (unturned). */
static void head_backward(work *w, head *hd, int n, const float *m_in, const float *l_in) {
    int nv = w->nv, Kp = w->Kp;
    memset(hd->dK, 0, sizeof(float) * w->n8 * Kp);
    memset(hd->dV, 0, sizeof(float) * w->n8 * Kp);
    for (int rb = 0; rb < nv; rb++) {
        /* padding rows: m = 0, l = 1 and a zero gradient, so they add nothing */
        float m[W] = {0}, l[W] = {1, 1, 1, 1, 1, 1, 1, 1};
        for (int r = 0; r < W && rb * W + r < n; r++) {
            m[r] = m_in[rb * W + r];
            l[r] = l_in[rb * W + r];
        }
        const float *G = hd->Z + (size_t)rb * W * Kp;
        scores(w, hd, rb);
        probabilities(w, rb, m, l, 0);
        /* dP = dz V^T, then dS = P (dP - D): softmax's backward */
        tiles(w->T, nv, G, Kp, hd->Vt, rb);
        for (int r = 0; r < W; r++) {
            f8 D = splat(hd->D[rb * W + r]);
            for (int u = 0; u <= rb; u++)
                w->T[r * nv + u] = w->S[r * nv + u] * (w->T[r * nv + u] - D);
        }
        rows_times(hd->dQ + (size_t)rb * W * Kp, w->T, nv, hd->Kr, Kp, (rb + 1) * W);
        add_transposed(hd->dK, w->T, nv, hd->Q + (size_t)rb * W * Kp, Kp, (rb + 1) * W);
        add_transposed(hd->dV, w->S, nv, G, Kp, (rb + 1) * W);
    }
}

/* Every head's dq, dk, dv into sequence b's rows of dqkv (turned back under RoPE). */
static void store_gradient(float *dqkv, const work *w, const qk_attention *a, int b) {
    int H = a->H, K = a->K, Kp = w->Kp;
    float turned[256];
    for (int j = 0; j < a->n; j++) {
        float *row = dqkv + ((size_t)b * a->n + j) * 3 * H * K;
        for (int h = 0; h < H; h++) {
            const head *hd = &w->heads[h];
            float *dq = row + (size_t)h * K, *dk = row + (size_t)(H + h) * K;
            float *dv = row + (size_t)(2 * H + h) * K;
            const float *gq = hd->dQ + (size_t)j * Kp, *gk = hd->dK + (size_t)j * Kp;
            if (a->cos_sin) {
                turn_back(turned, gq, a->cos_sin, j, K);
                gq = turned;
                turn_back(dk, gk, a->cos_sin, j, K);
            } else {
                memcpy(dk, gk, sizeof(float) * K);
            }
            for (int c = 0; c < K; c++) dq[c] = gq[c] * a->scale;
            memcpy(dv, hd->dV + (size_t)j * Kp, sizeof(float) * K);
        }
    }
}

/* Sequence b backward, in scratch w: its rows of dqkv [B, n, 3, H, K]. */
static void backward_sequence(work *w, const qk_attention *a, int b, const float *z,
                              const float *dz, const float *row_max, const float *row_sum,
                              float *dqkv) {
    load_sequence(w, a, b);
    load_gradient(w, a, z, dz, b);
    for (int h = 0; h < a->H; h++) {
        size_t at = ((size_t)b * a->H + h) * a->n;
        head_backward(w, &w->heads[h], a->n, row_max + at, row_sum + at);
    }
    store_gradient(dqkv, w, a, b);
}

/* dqkv [B, n, 3, H, K] from z, its gradient dz [B, n, H, K] and the forward's row statistics.
 * Returns as qk_causal_attention_forward. */
int qk_causal_attention_backward(const qk_attention *a, const float *z, const float *dz,
                                 const float *row_max, const float *row_sum, float *dqkv) {
    if (unsupported(a)) return 2;
    work w;
    if (!work_new(&w, a, 1)) return 1;
    for (int b = 0; b < a->B; b++) backward_sequence(&w, a, b, z, dz, row_max, row_sum, dqkv);
    work_free(&w, a->H);
    return 0;
}
