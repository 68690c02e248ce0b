/* A toy's training arithmetic in one pass per sequence: forward, next-token loss and every
 * gradient, on one CPU thread, in float32.
 *
 * The model is qkcore.models.toy.model.ToyTransformer: token embedding (+ learned positions
 * under APE), L blocks of x + Attn(LN(x)) with LayerNorm without gain or bias, a final
 * LayerNorm and an unembedding; the loss is the mean cross-entropy of positions 0..n-2 against
 * the next token. Attention is causal_attention.c's (included below). Each sequence runs
 * forward and straight back while its activations (about 400 KB at the default size) are still
 * in the core's cache; gradients add up over the sequences in their order.
 *
 * Why: a step of PyTorch's kernels spent a third of its time outside the arithmetic (tensors
 * of the whole batch allocated, written and read back from memory, a framework call per
 * operation). And the same bits on every machine, as for the attention (its header): every
 * operation below is an IEEE add, multiply, divide, square root or fused multiply-add in an
 * order fixed by this source, the exponential and logarithm are polynomials of them, so
 * neither the instruction set nor a BLAS library's choice of kernel can move a toy.
 */
#include "causal_attention.c"

enum { MAX_LAYERS = 8 };

/* What one call computes over; mirrors _Toy in toy_step.py. */
typedef struct {
    int B, n, d, H, K, V, L;
    const long *tokens;                      /* [B, n] */
    const float *embed;                      /* [V, d] */
    const float *pos;                        /* [>= n, d] under APE, else NULL */
    const float *Wq[MAX_LAYERS], *Wk[MAX_LAYERS], *Wv[MAX_LAYERS]; /* [H, d, K] */
    const float *Wo[MAX_LAYERS];             /* [H, K, d] */
    const float *unembed;                    /* [d, V] */
    const float *slopes;                     /* ALiBi's [H], or NULL */
    const float *cos_sin;                    /* RoPE's [n, 2, K/2], or NULL */
    float eps;                               /* LayerNorm's */
    float scale;                             /* attention's 1 / sqrt(K) */
    float loss_scale;                        /* the loss's weight per token: 1 / (B (n - 1)) */
} qk_toy;

/* Gradients, added to (the caller zeroes them); NULL pointers for a forward pass only. */
typedef struct {
    float *embed, *pos, *Wq[MAX_LAYERS], *Wk[MAX_LAYERS], *Wv[MAX_LAYERS], *Wo[MAX_LAYERS];
    float *unembed;
} qk_toy_grads;

/* ---------------------------------------------------------------------- matrix products */

/* C[i][j] = sum_k A(i, k) B[k][j] (or C += that sum, formed first, with accumulate), for
 * i < M, j < N (a multiple of W), k in order. A(i, k) = A[i * ai + k * ak]; B and C
 * row-major with strides ldb, ldc. Four rows by two vectors of accumulators. */
static void gemm(int M, int N, int Kd, const float *A, long ai, long ak, const float *B, long ldb,
                 float *C, long ldc, int accumulate) {
    int i = 0;
    for (; i + 4 <= M; i += 4) {
        int j = 0;
        for (; j + 2 * W <= N; j += 2 * W) {
            f8 a0[4], a1[4];
            for (int r = 0; r < 4; r++) a0[r] = a1[r] = splat(0.0f);
            for (int k = 0; k < Kd; k++) {
                f8 b0 = load(B + (size_t)k * ldb + j), b1 = load(B + (size_t)k * ldb + j + W);
                for (int r = 0; r < 4; r++) {
                    f8 x = splat(A[(size_t)(i + r) * ai + (size_t)k * ak]);
                    a0[r] = fma8(x, b0, a0[r]);
                    a1[r] = fma8(x, b1, a1[r]);
                }
            }
            for (int r = 0; r < 4; r++) {
                float *c = C + (size_t)(i + r) * ldc + j;
                store(c, accumulate ? load(c) + a0[r] : a0[r]);
                store(c + W, accumulate ? load(c + W) + a1[r] : a1[r]);
            }
        }
        for (; j < N; j += W) {
            f8 a0[4];
            for (int r = 0; r < 4; r++) a0[r] = splat(0.0f);
            for (int k = 0; k < Kd; k++) {
                f8 b0 = load(B + (size_t)k * ldb + j);
                for (int r = 0; r < 4; r++)
                    a0[r] = fma8(splat(A[(size_t)(i + r) * ai + (size_t)k * ak]), b0, a0[r]);
            }
            for (int r = 0; r < 4; r++) {
                float *c = C + (size_t)(i + r) * ldc + j;
                store(c, accumulate ? load(c) + a0[r] : a0[r]);
            }
        }
    }
    for (; i < M; i++)
        for (int j = 0; j < N; j += W) {
            f8 a0 = splat(0.0f);
            for (int k = 0; k < Kd; k++)
                a0 = fma8(splat(A[(size_t)i * ai + (size_t)k * ak]), load(B + (size_t)k * ldb + j), a0);
            float *c = C + (size_t)i * ldc + j;
            store(c, accumulate ? load(c) + a0 : a0);
        }
}

/* dst [cols][rows] = src [rows][cols]^T (scalar: once per call, for weights). */
static void transposed(float *dst, const float *src, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

/* ------------------------------------------------------------------- rows: norms, losses */

/* sum of x[0..d) (d a multiple of W) by lanes, then across them: a fixed order */
static inline float row_sum(const float *x, int d) {
    f8 acc = splat(0.0f);
    for (int c = 0; c < d; c += W) acc += load(x + c);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* y = (x - mean) / sqrt(var + eps) per row (var biased), rstd = 1 / sqrt(var + eps) */
static void layer_norm(float *y, float *rstd, const float *x, int n, int d, float eps) {
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * d;
        float *yi = y + (size_t)i * d;
        f8 mean = splat(row_sum(xi, d) / (float)d), sq = splat(0.0f);
        for (int c = 0; c < d; c += W) {
            f8 t = load(xi + c) - mean;
            sq = fma8(t, t, sq);
        }
        float var = (((sq[0] + sq[1]) + (sq[2] + sq[3])) + ((sq[4] + sq[5]) + (sq[6] + sq[7]))) /
                    (float)d;
        float r = 1.0f / __builtin_sqrtf(var + eps);
        rstd[i] = r;
        for (int c = 0; c < d; c += W) store(yi + c, (load(xi + c) - mean) * splat(r));
    }
}

/* dx += rstd (dy - mean(dy) - y mean(dy y)): LayerNorm's backward, added to dx */
static void layer_norm_back(float *dx, const float *dy, const float *y, const float *rstd, int n,
                            int d) {
    for (int i = 0; i < n; i++) {
        const float *gi = dy + (size_t)i * d, *yi = y + (size_t)i * d;
        float *di = dx + (size_t)i * d;
        f8 gy = splat(0.0f);
        for (int c = 0; c < d; c += W) gy = fma8(load(gi + c), load(yi + c), gy);
        f8 mean_g = splat(row_sum(gi, d) / (float)d);
        f8 mean_gy = splat((((gy[0] + gy[1]) + (gy[2] + gy[3])) + ((gy[4] + gy[5]) + (gy[6] + gy[7]))) /
                           (float)d);
        f8 r = splat(rstd[i]);
        for (int c = 0; c < d; c += W) {
            f8 t = load(gi + c) - mean_g - load(yi + c) * mean_gy;
            store(di + c, load(di + c) + r * t);
        }
    }
}

/* log x for x >= 1 (a softmax normaliser: its largest term is 1): x = 2^e f with f in
 * [sqrt(1/2), sqrt(2)), log f by Cephes' logf polynomial in f - 1, e ln2 in two parts */
static float log_of_sum(float x) {
    int e;
    unsigned bits;
    memcpy(&bits, &x, sizeof bits);
    e = (int)((bits >> 23) & 0xff) - 126; /* x = 2^e * m, m in [0.5, 1) */
    bits = (bits & 0x807fffffu) | 0x3f000000u;
    float m;
    memcpy(&m, &bits, sizeof m);
    if (m < 0.70710678118654752440f) {
        e -= 1;
        m = m + m - 1.0f;
    } else {
        m = m - 1.0f;
    }
    float z = m * m;
    float y = 7.0376836292e-2f;
    y = __builtin_fmaf(y, m, -1.1514610310e-1f);
    y = __builtin_fmaf(y, m, 1.1676998740e-1f);
    y = __builtin_fmaf(y, m, -1.2420140846e-1f);
    y = __builtin_fmaf(y, m, 1.4249322787e-1f);
    y = __builtin_fmaf(y, m, -1.6668057665e-1f);
    y = __builtin_fmaf(y, m, 2.0000714765e-1f);
    y = __builtin_fmaf(y, m, -2.4999993993e-1f);
    y = __builtin_fmaf(y, m, 3.3333331174e-1f);
    y = y * m * z;
    y = __builtin_fmaf((float)e, -2.12194440e-4f, y);
    y = __builtin_fmaf(-0.5f, z, y);
    return __builtin_fmaf((float)e, 0.693359375f, m + y);
}

/* nll[i] = log sum_v exp(l_iv) - l_i,next and dlogits = (softmax - onehot) * scale for rows
 * i < n - 1 (row n - 1 predicts nothing: its gradient is 0) */
static void next_token_loss(float *nll, float *dlogits, const float *logits, const long *tokens,
                            int n, int V, float scale) {
    for (int i = 0; i < n; i++) {
        const float *li = logits + (size_t)i * V;
        float *gi = dlogits ? dlogits + (size_t)i * V : NULL;
        if (i == n - 1) {
            if (gi) memset(gi, 0, sizeof(float) * V);
            continue;
        }
        f8 mv = load(li);
        for (int v = W; v < V; v += W) mv = vmax(load(li + v), mv);
        float m = mv[0];
        for (int l = 1; l < W; l++) m = mv[l] > m ? mv[l] : m;
        f8 total = splat(0.0f);
        for (int v = 0; v < V; v += W) total += exp_nonpositive(load(li + v) - splat(m));
        float s = ((total[0] + total[1]) + (total[2] + total[3])) +
                  ((total[4] + total[5]) + (total[6] + total[7]));
        long target = tokens[i + 1];
        nll[i] = (m + log_of_sum(s)) - li[target];
        if (gi) {
            f8 weight = splat(scale / s);
            for (int v = 0; v < V; v += W)
                store(gi + v, exp_nonpositive(load(li + v) - splat(m)) * weight);
            gi[target] = gi[target] - scale;
        }
    }
}

/* ---------------------------------------------------------------------------- the step */

/* Everything one call needs besides the model and gradients: weights laid out for the
 * products (once per call) and one sequence's activations (reused for every sequence). */
typedef struct {
    int Q;                                   /* 3 H K: query, key and value columns */
    float *Wcat[MAX_LAYERS], *WcatT[MAX_LAYERS], *WoT[MAX_LAYERS], *UT;
    float *dWcat[MAX_LAYERS];
    float *x[MAX_LAYERS + 1], *y[MAX_LAYERS], *rstd[MAX_LAYERS], *qkv[MAX_LAYERS], *z[MAX_LAYERS];
    float *row_max[MAX_LAYERS], *row_sum[MAX_LAYERS];
    float *yf, *rstdf, *logits, *dlogits, *dx, *dy, *dqkv, *dz;
    work attention;                          /* causal_attention.c's scratch, for B = 1 */
} step_state;

static void step_free(step_state *s, const qk_toy *m) {
    for (int l = 0; l < MAX_LAYERS; l++) {
        void *all[] = {s->Wcat[l], s->WcatT[l], s->WoT[l], s->dWcat[l], s->y[l], s->rstd[l],
                       s->qkv[l], s->z[l], s->row_max[l], s->row_sum[l], s->x[l]};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) release(all[i]);
    }
    release(s->x[MAX_LAYERS]);
    void *rest[] = {s->UT, s->yf, s->rstdf, s->logits, s->dlogits, s->dx, s->dy, s->dqkv, s->dz};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) release(rest[i]);
    if (s->attention.heads) work_free(&s->attention, m->H);
}

static int step_new(step_state *s, const qk_toy *m, int backward) {
    memset(s, 0, sizeof *s);
    int n = m->n, d = m->d, HK = m->H * m->K, V = m->V;
    s->Q = 3 * HK;
    int ok = 1;
#define NEW(ptr, count) ok = ok && ((ptr) = zeroed(sizeof(float) * (size_t)(count))) != NULL
    for (int l = 0; l < m->L; l++) {
        NEW(s->Wcat[l], d * s->Q);
        NEW(s->WcatT[l], d * s->Q);
        NEW(s->WoT[l], d * HK);
        if (backward) NEW(s->dWcat[l], d * s->Q);
        NEW(s->x[l], n * d);
        NEW(s->y[l], n * d);
        NEW(s->rstd[l], n);
        NEW(s->qkv[l], n * s->Q);
        NEW(s->z[l], n * HK);
        NEW(s->row_max[l], m->H * n);
        NEW(s->row_sum[l], m->H * n);
    }
    NEW(s->x[m->L], n * d);
    NEW(s->UT, V * d);
    NEW(s->yf, n * d);
    NEW(s->rstdf, n);
    NEW(s->logits, n * V);
    NEW(s->dlogits, n * V);
    NEW(s->dx, n * d);
    NEW(s->dy, n * d);
    NEW(s->dqkv, n * s->Q);
    NEW(s->dz, n * HK);
#undef NEW
    qk_attention one = {1, n, m->H, m->K, NULL, m->slopes, m->cos_sin, 0.0f};
    ok = ok && work_new(&s->attention, &one, backward);
    if (!ok) step_free(s, m);
    return ok;
}

/* The weights as the products read them: [Wq | Wk | Wv] as one [d, 3 H K] matrix (columns in
 * qkv's order: part, head, dimension) and its transpose, Wo^T [d, H K], the unembedding's
 * transpose [V, d]. */
static void lay_out_weights(step_state *s, const qk_toy *m) {
    int d = m->d, H = m->H, K = m->K, HK = H * K;
    for (int l = 0; l < m->L; l++) {
        const float *parts[3] = {m->Wq[l], m->Wk[l], m->Wv[l]};
        for (int t = 0; t < 3; t++)
            for (int h = 0; h < H; h++)
                for (int c = 0; c < d; c++)
                    memcpy(s->Wcat[l] + (size_t)c * s->Q + (size_t)(t * H + h) * K,
                           parts[t] + ((size_t)h * d + c) * K, sizeof(float) * K);
        transposed(s->WcatT[l], s->Wcat[l], d, s->Q);
        transposed(s->WoT[l], m->Wo[l], HK, d);
    }
    transposed(s->UT, m->unembed, d, m->V);
}

/* Sequence b forward: activations into s, the next-token losses into nll [n - 1]. */
static void forward(step_state *s, const qk_toy *m, qk_attention *a, int b, float *nll,
                    int backward) {
    int n = m->n, d = m->d, HK = m->H * m->K, V = m->V;
    const long *tokens = m->tokens + (size_t)b * n;
    for (int i = 0; i < n; i++) {
        float *xi = s->x[0] + (size_t)i * d;
        memcpy(xi, m->embed + (size_t)tokens[i] * d, sizeof(float) * d);
        if (m->pos)
            for (int c = 0; c < d; c += W) store(xi + c, load(xi + c) + load(m->pos + (size_t)i * d + c));
    }
    for (int l = 0; l < m->L; l++) {
        layer_norm(s->y[l], s->rstd[l], s->x[l], n, d, m->eps);
        gemm(n, s->Q, d, s->y[l], d, 1, s->Wcat[l], s->Q, s->qkv[l], s->Q, 0);
        a->qkv = s->qkv[l];
        forward_sequence(&s->attention, a, 0, s->z[l], s->row_max[l], s->row_sum[l]);
        memcpy(s->x[l + 1], s->x[l], sizeof(float) * (size_t)n * d);
        gemm(n, d, HK, s->z[l], HK, 1, m->Wo[l], d, s->x[l + 1], d, 1);
    }
    layer_norm(s->yf, s->rstdf, s->x[m->L], n, d, m->eps);
    gemm(n, V, d, s->yf, d, 1, m->unembed, V, s->logits, V, 0);
    next_token_loss(nll, backward ? s->dlogits : NULL, s->logits, tokens, n, V, m->loss_scale);
}

/* Sequence b backward, after its forward: every gradient added to g (dWcat in s). */
static void backward(step_state *s, const qk_toy *m, qk_attention *a, int b, qk_toy_grads *g) {
    int n = m->n, d = m->d, HK = m->H * m->K, V = m->V;
    const long *tokens = m->tokens + (size_t)b * n;
    gemm(d, V, n, s->yf, 1, d, s->dlogits, V, g->unembed, V, 1);       /* dU += yf^T dlogits */
    gemm(n, d, V, s->dlogits, V, 1, s->UT, d, s->dy, d, 0);            /* dyf = dlogits U^T */
    memset(s->dx, 0, sizeof(float) * (size_t)n * d);
    layer_norm_back(s->dx, s->dy, s->yf, s->rstdf, n, d);              /* dx_L */
    for (int l = m->L - 1; l >= 0; l--) {
        /* the block's output o = z Wo, added to the residual: do = dx */
        gemm(HK, d, n, s->z[l], 1, HK, s->dx, d, g->Wo[l], d, 1);      /* dWo += z^T do */
        gemm(n, HK, d, s->dx, d, 1, s->WoT[l], HK, s->dz, HK, 0);      /* dz = do Wo^T */
        a->qkv = s->qkv[l];
        backward_sequence(&s->attention, a, 0, s->z[l], s->dz, s->row_max[l], s->row_sum[l],
                          s->dqkv);
        gemm(d, s->Q, n, s->y[l], 1, d, s->dqkv, s->Q, s->dWcat[l], s->Q, 1); /* dW += y^T dqkv */
        gemm(n, d, s->Q, s->dqkv, s->Q, 1, s->WcatT[l], d, s->dy, d, 0);     /* dy = dqkv W^T */
        layer_norm_back(s->dx, s->dy, s->y[l], s->rstd[l], n, d);     /* dx_l = dx_l+1 + ... */
    }
    for (int i = 0; i < n; i++) {
        const float *gi = s->dx + (size_t)i * d;
        float *e = g->embed + (size_t)tokens[i] * d;
        for (int c = 0; c < d; c += W) store(e + c, load(e + c) + load(gi + c));
        if (g->pos) {
            float *p = g->pos + (size_t)i * d;
            for (int c = 0; c < d; c += W) store(p + c, load(p + c) + load(gi + c));
        }
    }
}

/* dWcat into the three parameters' gradients [H, d, K] (added). */
static void scatter_qkv_gradients(step_state *s, const qk_toy *m, qk_toy_grads *g) {
    int d = m->d, H = m->H, K = m->K;
    for (int l = 0; l < m->L; l++) {
        float *parts[3] = {g->Wq[l], g->Wk[l], g->Wv[l]};
        for (int t = 0; t < 3; t++)
            for (int h = 0; h < H; h++)
                for (int c = 0; c < d; c++) {
                    float *to = parts[t] + ((size_t)h * d + c) * K;
                    const float *from = s->dWcat[l] + (size_t)c * s->Q + (size_t)(t * H + h) * K;
                    for (int k = 0; k < K; k++) to[k] = to[k] + from[k];
                }
    }
}

static int toy_unsupported(const qk_toy *m) {
    return m->B < 1 || m->n < 2 || m->L < 1 || m->L > MAX_LAYERS || m->d % W || m->V % W ||
           (m->H * m->K) % W || m->K < 1 || m->K > 256 || (m->cos_sin && m->K % 2);
}

/* The next-token losses nll [B, n - 1] of every sequence and, given g, the gradient of their
 * mean (weighted by loss_scale) added to g, sequences in order. Returns 0, 1 when memory ran
 * out, 2 for shapes outside the engine's bounds (widths, vocabulary and H K multiples of 8). */
int qk_toy_step(const qk_toy *m, qk_toy_grads *g, float *nll) {
    if (toy_unsupported(m)) return 2;
    step_state s;
    if (!step_new(&s, m, g != NULL)) return 1;
    lay_out_weights(&s, m);
    qk_attention a = {1, m->n, m->H, m->K, NULL, m->slopes, m->cos_sin, m->scale};
    for (int b = 0; b < m->B; b++) {
        forward(&s, m, &a, b, nll + (size_t)b * (m->n - 1), g != NULL);
        if (g) backward(&s, m, &a, b, g);
    }
    if (g) scatter_qkv_gradients(&s, m, g);
    step_free(&s, m);
    return 0;
}

/* ------------------------------------------------------------------------------ AdamW */

/* The optimiser's hyper-parameters for one step; mirrors _Adam in native.py. */
typedef struct {
    float decay;                 /* 1 - lr * weight_decay */
    float lerp, beta2, rest2;    /* 1 - beta1; beta2 and 1 - beta2 */
    float eps;
    float step_size;             /* lr / (1 - beta1^t) */
    float root_bc2;              /* sqrt(1 - beta2^t) */
} qk_adam;

/* PyTorch's AdamW, element by element, in its order: p *= 1 - lr wd; m += (1 - b1)(g - m);
 * v = b2 v + (1 - b2) g g; p -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps). */
void qk_adamw(float *p, float *m, float *v, const float *g, long count, const qk_adam *h) {
    for (long i = 0; i < count; i++) {
        p[i] = p[i] * h->decay;
        m[i] = m[i] + h->lerp * (g[i] - m[i]);
        v[i] = v[i] * h->beta2 + h->rest2 * g[i] * g[i];
        float denom = __builtin_sqrtf(v[i]) / h->root_bc2 + h->eps;
        p[i] = p[i] - h->step_size * m[i] / denom;
    }
}
