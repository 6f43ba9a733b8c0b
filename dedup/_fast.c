/* dedup._fast: the per-page arithmetic after extraction in one C call each (issue 14 item 3).
 *
 * Each function gives, bit for bit, what a chain of small numpy calls gave (tests/test_fast.py keeps
 * those chains and compares on every goldset-dev page and hypothesis inputs):
 *
 *   shingle_sketch(hashes, n, k) -> (sketch, positions, distinct)
 *       dedup.simhash.shingle_hashes (splitmix64-mixed word n-gram hashes of uint64 term hashes), then
 *       the bottom-k distinct shingle hashes (sorted, uint64) with where each first occurs, on
 *       POSITION_LEVELS (256) levels of the shingle sequence (uint8), and the number of distinct
 *       shingles (dedup.features.Featurizer.fingerprint). sketch and positions as bytearrays.
 *   simhash(hashes, weights) -> int | None
 *       Charikar simhash of uint64 hashes with float32 weights (dedup.simhash.simhash's w @ votes, then
 *       the signs) when every sum of the weights is exact in float32 whatever the order (then BLAS's
 *       sums are these); None otherwise (the caller takes numpy's product).
 *   mrc_signature(text, unique, rows, cols, values, part_norm) -> bytearray | None
 *       The multireference-cosine signature (float32) of a text (dedup.mrc.ReferenceText.signature),
 *       ASCII text lowercased and its whitespace runs folded here, any other given folded (" ".join(
 *       text.lower().split()), which is the same for ASCII text): its character 3-grams counted in a hash table,
 *       the reference's sparse count matrix (rows, cols, values over the sorted unique grams) applied.
 *       None when the text holds a surrogate (Python's encoder refuses it) or a scale is zero.
 *   term_hashes(tokens, cache, make=None, cap=0) -> bytearray | list
 *       The xxh3-64 hashes of the tokens' terms, looked up in the normaliser's token -> hash cache
 *       (dedup.text.Normalizer.term_hashes; a stop word is cached as None and left out), as uint64
 *       bytes. A token the cache misses: with make, make(token) gives its hash (or None), added to the
 *       cache while it holds fewer than cap entries, all in one pass; without, the list of the tokens
 *       the cache misses is returned instead, for the caller to add before asking again.
 *   tdw_sums(parts, weights) -> (bytearray, bytearray)
 *       The TDW vector of parts of term hashes (uint64) with a weight each, when every sum of the
 *       weights is exact in float64 (dedup.tdw.term_weights checks): each distinct hash, sorted, with
 *       the sum of its occurrences' weights as float32, where positive.
 *   sketch_keys(hashes, positions) -> (bytearray, bytearray)
 *       dedup.record.sketch_keys: the distinct top-24-bit keys of uint64 shingle hashes, sorted (uint32),
 *       each with the lowest of its hashes' positions (uint8).
 *   prefix_positional_many(r, samples, sizes, jaccard, factor) -> list[bool]
 *       dedup.reducer.ComparisonReducer.prefix_positional_ok_sampled_many (factor: jaccard / (1 + jaccard)).
 *   containment_many(a, a_total, bs, b_totals, min_size) -> list[(containment, resemblance)]
 *       dedup.deduplicator.containment_many over sorted uint32 (or uint64) sketch keys.
 *   ef_encode(keys) -> bytes | None
 *       Sorted (non-decreasing) uint32 keys as an Elias-Fano code (index.local.records, blob DR4): one
 *       byte l, then each key's low l bits (LSB first), then its high part in unary (bit (key >> l) + i
 *       set for the i-th key), l chosen for the fewest bytes. None when the keys are not sorted.
 *   ef_decode(buf, offset, n, ...) -> (bytearray, end)
 *       The keys (uint32) of consecutive ef_encode codes of n, ... keys from offset in buf (one array), and
 *       the offset just past them.
 *
 * Plain CPython C API; inputs are read through the buffer protocol with their item sizes checked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define POSITION_LEVELS 256

static const uint64_t M1 = 0xBF58476D1CE4E5B9ULL, M2 = 0x94D049BB133111EBULL, GOLD = 0x9E3779B97F4A7C15ULL;

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= M1;
    x ^= x >> 27;
    x *= M2;
    x ^= x >> 31;
    return x;
}

/* a contiguous buffer of `itemsize`-byte items; 0 on success, -1 with an exception set */
static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != itemsize || view->len % itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes expected, got %zd", what, itemsize, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* two sequences of one length as fast sequences (new references in *a and *b); -1 with an exception set */
static int paired(PyObject *x, PyObject *y, PyObject **a, PyObject **b, const char *what) {
    *a = PySequence_Fast(x, what);
    if (!*a)
        return -1;
    *b = PySequence_Fast(y, what);
    if (!*b) {
        Py_CLEAR(*a);
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(*a) != PySequence_Fast_GET_SIZE(*b)) {
        PyErr_Format(PyExc_ValueError, "%s: sequences of one length expected", what);
        Py_CLEAR(*a);
        Py_CLEAR(*b);
        return -1;
    }
    return 0;
}

/* the two arguments of a call as buffers of the given item sizes; -1 with an exception set (none held) */
static int two_buffers(PyObject *args, Py_buffer *a, Py_ssize_t a_size, const char *a_what, Py_buffer *b,
                       Py_ssize_t b_size, const char *b_what) {
    PyObject *x, *y;
    if (!PyArg_ParseTuple(args, "OO", &x, &y) || get_buffer(x, a, a_size, a_what) < 0)
        return -1;
    if (get_buffer(y, b, b_size, b_what) < 0) {
        PyBuffer_Release(a);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* shingle_sketch                                                                                   */

typedef struct {
    uint64_t hash;
    uint64_t index;
} pair_t;

/* LSD radix sort of pairs by hash, 8 bits a pass: stable, so equal hashes keep their text order
 * (numpy's argsort(kind="stable")). Passes where every hash has the same byte are skipped. */
static pair_t *radix_sort(pair_t *a, pair_t *tmp, size_t n) {
    size_t counts[8][256];
    memset(counts, 0, sizeof counts);
    for (size_t i = 0; i < n; i++) {
        uint64_t h = a[i].hash;
        for (int b = 0; b < 8; b++)
            counts[b][(h >> (8 * b)) & 0xFF]++;
    }
    for (int b = 0; b < 8; b++) {
        size_t *c = counts[b];
        if (c[(a[0].hash >> (8 * b)) & 0xFF] == n)
            continue; /* one bucket: the order stays */
        size_t sum = 0;
        for (int v = 0; v < 256; v++) {
            size_t t = c[v];
            c[v] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++)
            tmp[c[(a[i].hash >> (8 * b)) & 0xFF]++] = a[i];
        pair_t *swap = a;
        a = tmp;
        tmp = swap;
    }
    return a;
}

static PyObject *shingle_sketch(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t n, k;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &n, &k))
        return NULL;
    if (n < 1 || k < 0) {
        PyErr_Format(PyExc_ValueError, "shingle size must be >= 1 and k >= 0 (got n=%zd, k=%zd)", n, k);
        return NULL;
    }
    Py_buffer view;
    if (get_buffer(obj, &view, 8, "hashes") < 0)
        return NULL;
    const uint64_t *h = (const uint64_t *)view.buf;
    size_t size = (size_t)(view.len / 8);
    size_t m = size == 0 ? 0 : (size > (size_t)n ? size - (size_t)n + 1 : 1);
    size_t terms = size < (size_t)n ? size : (size_t)n;
    pair_t *pairs = NULL;
    size_t kept = 0, distinct = 0;
    PyObject *sketch = NULL, *positions = NULL, *out = NULL;
    if (m) {
        pairs = PyMem_Malloc(2 * m * sizeof(pair_t));
        if (!pairs) {
            PyErr_NoMemory();
            goto done;
        }
        for (size_t i = 0; i < m; i++) {
            uint64_t acc = mix(h[i]);
            for (size_t j = 1; j < terms; j++)
                acc = mix(acc * GOLD + h[i + j]);
            pairs[i].hash = acc;
            pairs[i].index = i;
        }
        pair_t *sorted = radix_sort(pairs, pairs + m, m);
        /* runs of equal hashes: the first of each (its first occurrence) kept, in place */
        for (size_t i = 0; i < m; i++) {
            if (i && sorted[i].hash == sorted[i - 1].hash)
                continue;
            if (kept < (size_t)k)
                sorted[kept++] = sorted[i];
            distinct++;
        }
        sketch = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(kept * 8));
        positions = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)kept);
        if (!sketch || !positions)
            goto done;
        uint64_t *s = (uint64_t *)PyByteArray_AS_STRING(sketch);
        uint8_t *p = (uint8_t *)PyByteArray_AS_STRING(positions);
        for (size_t i = 0; i < kept; i++) {
            s[i] = sorted[i].hash;
            p[i] = (uint8_t)(sorted[i].index * POSITION_LEVELS / m);
        }
    } else {
        sketch = PyByteArray_FromStringAndSize(NULL, 0);
        positions = PyByteArray_FromStringAndSize(NULL, 0);
        if (!sketch || !positions)
            goto done;
    }
    out = Py_BuildValue("(OOn)", sketch, positions, (Py_ssize_t)distinct);
done:
    Py_XDECREF(sketch);
    Py_XDECREF(positions);
    PyMem_Free(pairs);
    PyBuffer_Release(&view);
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* simhash                                                                                          */

/* SIGNS[v][t]: +1 when bit t of byte v is set, else -1 (a hash's votes, a byte at a time) */
static float SIGNS[256][8];

static PyObject *simhash(PyObject *self, PyObject *args) {
    Py_buffer hv, wv;
    if (two_buffers(args, &hv, 8, "hashes", &wv, 4, "weights") < 0)
        return NULL;
    PyObject *out = NULL;
    size_t n = (size_t)(hv.len / 8);
    if ((size_t)(wv.len / 4) != n) {
        PyErr_Format(PyExc_ValueError, "simhash needs one weight per feature (got %zd weights, %zu features)",
                     wv.len / 4, n);
        goto done;
    }
    const uint64_t *h = (const uint64_t *)hv.buf;
    const float *w = (const float *)wv.buf;
    /* exact in any order: every weight a multiple of 2^-frac (frac: the most fraction bits of any weight)
     * and the sum of their magnitudes below 2^(24 - frac), so that every partial sum of +-weights is a
     * float32 without rounding, whatever the order BLAS adds them in */
    int frac = INT32_MIN;
    double total = 0.0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &w[i], 4);
        uint32_t exp = (bits >> 23) & 0xFF, mant = bits & 0x7FFFFF;
        if (exp == 0xFF) { /* inf or nan */
            out = Py_NewRef(Py_None);
            goto done;
        }
        if (exp == 0 && mant == 0)
            continue;
        /* |w| = mant * 2^-149 (subnormal) or (mant | 2^23) * 2^(exp - 150) */
        int need = exp ? 150 - (int)exp - __builtin_ctz(mant | 0x800000) : 149 - __builtin_ctz(mant);
        if (need > frac)
            frac = need;
        total += fabs((double)w[i]);
    }
    if (frac != INT32_MIN && (frac > 100 || total >= ldexp(1.0, 24 - frac))) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    float v[64] = {0};
    for (size_t i = 0; i < n; i++) {
        uint64_t x = h[i];
        float wi = w[i];
        for (int j = 0; j < 8; j++) {
            const float *sign = SIGNS[(x >> (8 * j)) & 0xFF];
            float *acc = v + 8 * j;
            for (int t = 0; t < 8; t++)
                acc[t] += sign[t] * wi;
        }
    }
    uint64_t fp = 0;
    for (int b = 0; b < 64; b++)
        if (v[b] > 0)
            fp |= 1ULL << b;
    out = PyLong_FromUnsignedLongLong(fp);
done:
    PyBuffer_Release(&hv);
    PyBuffer_Release(&wv);
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* mrc_signature                                                                                    */

#define EMPTY UINT64_MAX /* no 3-gram id (three 21-bit code points: 63 bits) is this */

typedef struct {
    uint32_t key, count;
} slot32_t;

typedef struct {
    uint64_t key, count;
} slot64_t;

static PyObject *mrc_signature(PyObject *self, PyObject *args) {
    PyObject *text, *uobj, *robj, *cobj, *vobj, *pobj;
    if (!PyArg_ParseTuple(args, "UOOOOO", &text, &uobj, &robj, &cobj, &vobj, &pobj))
        return NULL;
    Py_buffer views[5];
    Py_buffer *uv = &views[0], *rv = &views[1], *cv = &views[2], *vv = &views[3], *pv = &views[4];
    PyObject *objs[5] = {uobj, robj, cobj, vobj, pobj};
    int got = 0;
    PyObject *out = NULL;
    void *table = NULL;
    double *products = NULL;
    Py_UCS1 *folded = NULL;
    for (; got < 5; got++) /* all of 8-byte items: uint64, int64 and float64 arrays */
        if (get_buffer(objs[got], &views[got], 8, "mrc_signature's arrays") < 0)
            goto done;
    size_t entries = (size_t)(rv->len / 8), parts = (size_t)(pv->len / 8), unique = (size_t)(uv->len / 8);
    if ((size_t)(cv->len / 8) != entries || (size_t)(vv->len / 8) != entries) {
        PyErr_SetString(PyExc_ValueError, "rows, cols and values must have one item per entry");
        goto done;
    }
    const int64_t *rows = (const int64_t *)rv->buf, *cols = (const int64_t *)cv->buf;
    for (size_t e = 0; e < entries; e++)
        if (rows[e] < 0 || (size_t)rows[e] >= parts || cols[e] < 0 || (size_t)cols[e] >= unique) {
            PyErr_SetString(PyExc_ValueError, "a matrix entry outside the partitions or the unique grams");
            goto done;
        }
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (PyUnicode_IS_ASCII(text)) {
        /* " ".join(text.lower().split()) of ASCII text, here: A-Z lowered, runs of str.split's ASCII
         * whitespace (\t \n \v \f \r \x1c-\x1f and space) one space, none at either end */
        folded = PyMem_Malloc(len ? (size_t)len : 1);
        if (!folded) {
            PyErr_NoMemory();
            goto done;
        }
        const Py_UCS1 *src = (const Py_UCS1 *)data;
        Py_ssize_t n = 0;
        int space = 0;
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS1 c = src[i];
            if (c == ' ' || (c >= 9 && c <= 13) || (c >= 28 && c <= 31)) {
                space = n > 0;
                continue;
            }
            if (space) {
                folded[n++] = ' ';
                space = 0;
            }
            folded[n++] = c >= 'A' && c <= 'Z' ? (Py_UCS1)(c + 32) : c;
        }
        data = folded;
        len = n;
        kind = PyUnicode_1BYTE_KIND;
    }
    out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(parts * 4));
    if (!out)
        goto done;
    float *sig = (float *)PyByteArray_AS_STRING(out);
    if (len < 3) { /* no 3-gram: the zero signature */
        memset(sig, 0, parts * 4);
        goto done;
    }
    if (kind != PyUnicode_1BYTE_KIND)
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c >= 0xD800 && c <= 0xDFFF) { /* Python's encoder refuses a surrogate: so does the caller */
                Py_CLEAR(out);
                out = Py_NewRef(Py_None);
                goto done;
            }
        }
    /* the 3-grams counted in an open-addressing table of more slots than grams (so one is always free):
     * 32-bit keys (three 8-bit code points) for 1-byte text, the 63-bit ids otherwise */
    size_t grams = (size_t)len - 2, cap = 16;
    if (grams >= ((size_t)1 << 30)) { /* beyond the 32-bit table's hash: the caller's numpy path */
        Py_CLEAR(out);
        out = Py_NewRef(Py_None);
        goto done;
    }
    int shift = 4;
    while (cap <= grams) {
        cap <<= 1;
        shift++;
    }
    size_t mask = cap - 1;
    uint64_t squares = 0; /* the page's squared norm, grown as each count grows: an integer below 2^53 */
    const uint64_t *ref = (const uint64_t *)uv->buf;
    const double *values = (const double *)vv->buf, *part_norm = (const double *)pv->buf;
    size_t slot = kind == PyUnicode_1BYTE_KIND ? sizeof(slot32_t) : sizeof(slot64_t);
    products = PyMem_Calloc(parts ? parts : 1, sizeof(double));
    table = PyMem_Malloc(cap * slot);
    if (!products || !table) {
        Py_CLEAR(out);
        PyErr_NoMemory();
        goto done;
    }
    memset(table, 0xFF, cap * slot); /* every key all ones: free (no key is: 24 bits, 63 bits) */
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *t = (const Py_UCS1 *)data;
        slot32_t *t32 = table;
        uint32_t id = ((uint32_t)t[0] << 8) | t[1];
        for (Py_ssize_t i = 2; i < len; i++) {
            id = ((id << 8) | t[i]) & 0xFFFFFF;
            size_t s = (size_t)((id * 0x9E3779B1u) >> (32 - shift)) & mask;
            while (t32[s].key != id && t32[s].key != UINT32_MAX)
                s = (s + 1) & mask;
            if (t32[s].key == UINT32_MAX) {
                t32[s].key = id;
                t32[s].count = 0;
            }
            squares += 2 * (uint64_t)t32[s].count + 1; /* (c + 1)^2 - c^2 */
            t32[s].count++;
        }
        for (size_t e = 0; e < entries; e++) {
            uint64_t full = ref[cols[e]];
            uint64_t ca = full >> 42, cb = (full >> 21) & 0x1FFFFF, cc = full & 0x1FFFFF;
            if (ca > 0xFF || cb > 0xFF || cc > 0xFF) /* not a gram of 1-byte text */
                continue;
            uint32_t key = (uint32_t)((ca << 16) | (cb << 8) | cc);
            size_t s = (size_t)((key * 0x9E3779B1u) >> (32 - shift)) & mask;
            while (t32[s].key != key && t32[s].key != UINT32_MAX)
                s = (s + 1) & mask;
            if (t32[s].key == key) /* integer products and sums: exact, as numpy's bincount */
                products[rows[e]] += (double)t32[s].count * values[e];
        }
    } else {
        slot64_t *t64 = table;
        uint64_t a = PyUnicode_READ(kind, data, 0), b = PyUnicode_READ(kind, data, 1);
        for (Py_ssize_t i = 2; i < len; i++) {
            uint64_t c = PyUnicode_READ(kind, data, i);
            uint64_t id = (a << 42) | (b << 21) | c;
            size_t s = (size_t)((id * 0x9E3779B97F4A7C15ULL) >> (64 - shift)) & mask;
            while (t64[s].key != id && t64[s].key != EMPTY)
                s = (s + 1) & mask;
            if (t64[s].key == EMPTY) {
                t64[s].key = id;
                t64[s].count = 0;
            }
            squares += 2 * t64[s].count + 1;
            t64[s].count++;
            a = b;
            b = c;
        }
        for (size_t e = 0; e < entries; e++) {
            uint64_t id = ref[cols[e]];
            size_t s = (size_t)((id * 0x9E3779B97F4A7C15ULL) >> (64 - shift)) & mask;
            while (t64[s].key != id && t64[s].key != EMPTY)
                s = (s + 1) & mask;
            if (t64[s].key == id)
                products[rows[e]] += (double)t64[s].count * values[e];
        }
    }
    double norm = sqrt((double)squares);
    for (size_t p = 0; p < parts; p++) {
        double scale = part_norm[p] * norm;
        if (scale == 0.0) { /* numpy's nan_to_num path: the caller's */
            Py_CLEAR(out);
            out = Py_NewRef(Py_None);
            goto done;
        }
        sig[p] = (float)(products[p] / scale);
    }
done:
    PyMem_Free(folded);
    PyMem_Free(table);
    PyMem_Free(products);
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* containment_many                                                                                 */

/* unsigned keys of 4 or 8 bytes (uint32 sketch keys, or uint64 hashes), compared by value */
typedef struct {
    const void *p;
    size_t n;
    int wide;
} keys_t;

static inline uint64_t key_at(const keys_t *k, size_t i) {
    return k->wide ? ((const uint64_t *)k->p)[i] : ((const uint32_t *)k->p)[i];
}

/* an unsigned integer buffer of 4 or 8 bytes an item */
static int get_keys(PyObject *obj, Py_buffer *view, keys_t *k, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (!((view->itemsize == 4 && (!strcmp(f, "I") || (sizeof(long) == 4 && !strcmp(f, "L")))) ||
          (view->itemsize == 8 && (!strcmp(f, "Q") || (sizeof(long) == 8 && !strcmp(f, "L")))))) {
        PyErr_Format(PyExc_TypeError, "%s: unsigned 32- or 64-bit keys expected, got format %s", what, f);
        PyBuffer_Release(view);
        return -1;
    }
    k->p = view->buf;
    k->n = (size_t)(view->len / view->itemsize);
    k->wide = view->itemsize == 8;
    return 0;
}

/* the first position in sorted keys whose value is >= x (right: > x) */
static inline size_t lower_bound(const keys_t *a, uint64_t x) {
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_at(a, mid) < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline size_t upper_bound(const keys_t *a, uint64_t x) {
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_at(a, mid) <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static PyObject *containment_many(PyObject *self, PyObject *args) {
    PyObject *aobj, *bs, *totals;
    long long a_total, min_size;
    if (!PyArg_ParseTuple(args, "OLOOL", &aobj, &a_total, &bs, &totals, &min_size))
        return NULL;
    if (paired(bs, totals, &bs, &totals, "containment_many's sketches and totals") < 0)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(bs);
    PyObject *out = NULL;
    Py_buffer av;
    keys_t a;
    if (get_keys(aobj, &av, &a, "a") < 0)
        goto fail_seq;
    size_t na_all = a.n;
    out = PyList_New(count);
    if (!out)
        goto fail;
    for (Py_ssize_t j = 0; j < count; j++) {
        double cont = 0.0, res = 0.0;
        long long b_total = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(totals, j));
        if (b_total == -1 && PyErr_Occurred())
            goto fail_out;
        Py_buffer bv;
        keys_t b;
        if (get_keys(PySequence_Fast_GET_ITEM(bs, j), &bv, &b, "b") < 0)
            goto fail_out;
        size_t nb_all = b.n;
        if (na_all && nb_all) {
            size_t inter = 0, nb = nb_all, na = na_all;
            uint64_t a_last = key_at(&a, na_all - 1);
            for (size_t i = 0; i < nb_all; i++) {
                uint64_t x = key_at(&b, i);
                size_t p = lower_bound(&a, x);
                if (p == na_all)
                    p = na_all - 1;
                inter += key_at(&a, p) == x;
            }
            if (a_total > (long long)na_all) { /* b's keys within a's cut */
                nb = 0;
                for (size_t i = 0; i < nb_all; i++)
                    nb += key_at(&b, i) <= a_last;
            }
            if (b_total > (long long)nb_all) /* a's keys within b's cut */
                na = upper_bound(&a, key_at(&b, nb_all - 1));
            if (na && nb) {
                res = (double)inter / (double)(na + nb - inter);
                long long smaller = a_total < b_total ? a_total : b_total;
                cont = smaller < min_size ? res : (double)inter / (double)(na < nb ? na : nb);
            }
        }
        PyBuffer_Release(&bv);
        PyObject *pair = Py_BuildValue("(dd)", cont, res);
        if (!pair)
            goto fail_out;
        PyList_SET_ITEM(out, j, pair);
    }
    PyBuffer_Release(&av);
    Py_DECREF(bs);
    Py_DECREF(totals);
    return out;
fail_out:
    Py_CLEAR(out);
fail:
    PyBuffer_Release(&av);
fail_seq:
    Py_DECREF(bs);
    Py_DECREF(totals);
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* term_hashes and tdw_sums                                                                         */

static PyObject *term_hashes(PyObject *self, PyObject *args) {
    PyObject *tokens, *cache, *make = Py_None;
    Py_ssize_t cap = 0;
    if (!PyArg_ParseTuple(args, "O!O!|On", &PyList_Type, &tokens, &PyDict_Type, &cache, &make, &cap))
        return NULL;
    if (make == Py_None)
        make = NULL;
    else if (!PyCallable_Check(make)) {
        PyErr_SetString(PyExc_TypeError, "term_hashes: make must be callable");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < n; i++) /* exact str keys: no Python code runs in the lookups below */
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(tokens, i))) {
            PyErr_SetString(PyExc_TypeError, "term_hashes: tokens must be str");
            return NULL;
        }
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n * 8), *missing = NULL;
    if (!out)
        return NULL;
    Py_ssize_t kept = 0;
    /* with make, the loop calls Python: the list is read again at every step and the token held while make runs */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tokens) && i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        PyObject *value = PyDict_GetItemWithError(cache, token); /* borrowed */
        PyObject *made = NULL;
        if (!value) {
            if (PyErr_Occurred())
                goto fail;
            if (make) { /* the miss's hash (or None) from make, kept in the cache while it holds fewer than cap */
                Py_INCREF(token);
                made = PyObject_CallOneArg(make, token);
                if (made && PyDict_GET_SIZE(cache) < cap && PyDict_SetItem(cache, token, made) < 0)
                    Py_CLEAR(made);
                Py_DECREF(token);
                if (!made)
                    goto fail;
                value = made;
            } else {
                if (!missing && !(missing = PyList_New(0)))
                    goto fail;
                if (PyList_Append(missing, token) < 0)
                    goto fail;
                continue;
            }
        }
        if (missing || value == Py_None) { /* None: a stop word, no term */
            Py_XDECREF(made);
            continue;
        }
        unsigned long long x = PyLong_AsUnsignedLongLong(value);
        Py_XDECREF(made);
        if (x == (unsigned long long)-1 && PyErr_Occurred())
            goto fail;
        ((uint64_t *)PyByteArray_AS_STRING(out))[kept++] = x;
    }
    if (missing) {
        Py_DECREF(out);
        return missing;
    }
    if (PyByteArray_Resize(out, kept * 8) < 0)
        goto fail;
    return out;
fail:
    Py_DECREF(out);
    Py_XDECREF(missing);
    return NULL;
}

static PyObject *tdw_sums(PyObject *self, PyObject *args) {
    PyObject *parts, *weights;
    if (!PyArg_ParseTuple(args, "OO", &parts, &weights))
        return NULL;
    if (paired(parts, weights, &parts, &weights, "tdw_sums's parts and weights") < 0)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(parts);
    Py_buffer *views = NULL;
    double *w = NULL;
    pair_t *pairs = NULL;
    PyObject *terms = NULL, *sums = NULL, *out = NULL;
    Py_ssize_t got = 0;
    views = PyMem_Calloc(count ? (size_t)count : 1, sizeof(Py_buffer));
    w = PyMem_Calloc(count ? (size_t)count : 1, sizeof(double));
    if (!views || !w) {
        PyErr_NoMemory();
        goto done;
    }
    size_t n = 0;
    for (; got < count; got++) {
        if (get_buffer(PySequence_Fast_GET_ITEM(parts, got), &views[got], 8, "term hashes") < 0)
            goto done;
        n += (size_t)(views[got].len / 8);
        w[got] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(weights, got));
        if (w[got] == -1.0 && PyErr_Occurred()) {
            got++;
            goto done;
        }
    }
    pairs = PyMem_Malloc((n ? 2 * n : 1) * sizeof(pair_t));
    if (!pairs) {
        PyErr_NoMemory();
        goto done;
    }
    size_t at = 0;
    for (Py_ssize_t p = 0; p < count; p++) {
        const uint64_t *h = (const uint64_t *)views[p].buf;
        for (Py_ssize_t i = 0; i < views[p].len / 8; i++) {
            pairs[at].hash = h[i];
            pairs[at++].index = (uint64_t)p; /* the part: its weight */
        }
    }
    pair_t *sorted = n ? radix_sort(pairs, pairs + n, n) : pairs;
    /* each term's weights summed (exact in float64 for the caller's weights, so in any order), the
     * terms of a positive sum kept with it as float32 */
    size_t kept = 0;
    for (size_t i = 0; i < n;) {
        uint64_t hash = sorted[i].hash;
        double total = 0.0;
        for (; i < n && sorted[i].hash == hash; i++)
            total += w[sorted[i].index];
        if (total > 0) {
            sorted[kept].hash = hash;
            float f = (float)total;
            uint32_t bits;
            memcpy(&bits, &f, 4);
            sorted[kept++].index = bits;
        }
    }
    terms = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(kept * 8));
    sums = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(kept * 4));
    if (!terms || !sums)
        goto done;
    uint64_t *t = (uint64_t *)PyByteArray_AS_STRING(terms);
    uint32_t *f = (uint32_t *)PyByteArray_AS_STRING(sums);
    for (size_t i = 0; i < kept; i++) {
        t[i] = sorted[i].hash;
        f[i] = (uint32_t)sorted[i].index;
    }
    out = PyTuple_Pack(2, terms, sums);
done:
    Py_XDECREF(terms);
    Py_XDECREF(sums);
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    PyMem_Free(views);
    PyMem_Free(w);
    PyMem_Free(pairs);
    Py_DECREF(parts);
    Py_DECREF(weights);
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* sketch_keys                                                                                      */

static PyObject *sketch_keys(PyObject *self, PyObject *args) {
    Py_buffer hv, pv;
    if (two_buffers(args, &hv, 8, "hashes", &pv, 1, "positions") < 0)
        return NULL;
    PyObject *keys = NULL, *first = NULL, *out = NULL;
    pair_t *pairs = NULL;
    size_t n = (size_t)(hv.len / 8);
    if ((size_t)pv.len != n) {
        PyErr_Format(PyExc_ValueError, "one position a shingle hash (got %zd for %zu)", pv.len, n);
        goto done;
    }
    const uint64_t *h = (const uint64_t *)hv.buf;
    const uint8_t *pos = (const uint8_t *)pv.buf;
    pairs = PyMem_Malloc((n ? 2 * n : 1) * sizeof(pair_t));
    if (!pairs) {
        PyErr_NoMemory();
        goto done;
    }
    int sorted_in = 1;
    for (size_t i = 0; i < n; i++) {
        pairs[i].hash = h[i] >> 40; /* the top KEY_BITS (24) bits */
        pairs[i].index = pos[i];
        if (i && pairs[i].hash < pairs[i - 1].hash)
            sorted_in = 0;
    }
    /* keys in order, equal keys in their given order (numpy's stable argsort); each key once, with the
     * lowest position of its hashes */
    pair_t *sorted = sorted_in || !n ? pairs : radix_sort(pairs, pairs + n, n);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept && sorted[kept - 1].hash == sorted[i].hash) {
            if (sorted[i].index < sorted[kept - 1].index)
                sorted[kept - 1].index = sorted[i].index;
        } else
            sorted[kept++] = sorted[i];
    }
    keys = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(kept * 4));
    first = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)kept);
    if (!keys || !first)
        goto done;
    uint32_t *k = (uint32_t *)PyByteArray_AS_STRING(keys);
    uint8_t *f = (uint8_t *)PyByteArray_AS_STRING(first);
    for (size_t i = 0; i < kept; i++) {
        k[i] = (uint32_t)sorted[i].hash;
        f[i] = (uint8_t)sorted[i].index;
    }
    out = PyTuple_Pack(2, keys, first);
done:
    Py_XDECREF(keys);
    Py_XDECREF(first);
    PyMem_Free(pairs);
    PyBuffer_Release(&hv);
    PyBuffer_Release(&pv);
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* prefix_positional_many                                                                           */

static inline long long prefix_length(double jaccard, long long size) {
    return size ? size - (long long)ceil(jaccard * (double)size) + 1 : 0;
}

static PyObject *prefix_positional_many(PyObject *self, PyObject *args) {
    PyObject *robj, *samples, *sizes;
    double jaccard, factor;
    if (!PyArg_ParseTuple(args, "OOOdd", &robj, &samples, &sizes, &jaccard, &factor))
        return NULL;
    if (paired(samples, sizes, &samples, &sizes, "prefix_positional_many's samples and sizes") < 0)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(samples);
    PyObject *out = NULL;
    Py_buffer rv;
    keys_t r;
    if (get_keys(robj, &rv, &r, "r") < 0)
        goto fail_seq;
    out = PyList_New(count);
    if (!out)
        goto fail;
    long long rn = (long long)r.n;
    keys_t pr = r;
    pr.n = (size_t)prefix_length(jaccard, rn);
    if (pr.n > r.n) /* a threshold above 1 */
        pr.n = r.n;
    for (Py_ssize_t j = 0; j < count; j++) {
        int ok = 0;
        long long size = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sizes, j));
        if (size == -1 && PyErr_Occurred())
            goto fail_out;
        Py_buffer sv;
        keys_t smp;
        if (get_keys(PySequence_Fast_GET_ITEM(samples, j), &sv, &smp, "sample") < 0)
            goto fail_out;
        long long k = (long long)smp.n;
        int full = k >= size;
        long long whole = full ? k : size;
        long long length = prefix_length(jaccard, whole);
        if (length > k)
            length = k; /* the prefix of a sample: at most the sample */
        if (length < 0)
            length = 0;
        if (rn && whole) {
            double needed = factor * (double)(rn + whole);
            long long p = -1, q = -1;
            if (pr.n)
                for (long long i = 0; i < length; i++) { /* the sample's prefix ascends: its first hit is the first */
                    uint64_t x = key_at(&smp, (size_t)i);
                    size_t at = lower_bound(&pr, x);
                    if (at == pr.n)
                        at = pr.n - 1;
                    if (key_at(&pr, at) == x) {
                        p = (long long)at;
                        q = i;
                        break;
                    }
                }
            if (p >= 0) {
                long long a = rn - p - 1, b = whole - q - 1;
                ok = (double)(1 + (a < b ? a : b)) >= needed;
            } else if (!full && length >= k) {
                if (k == 0) {
                    PyBuffer_Release(&sv);
                    PyErr_SetString(PyExc_IndexError, "an empty sample of a set that is not empty");
                    goto fail_out;
                }
                long long after = (long long)upper_bound(&pr, key_at(&smp, (size_t)(k - 1)));
                long long a = rn - after - 1, b = whole - k - 1;
                ok = after < (long long)pr.n && (double)(1 + (a < b ? a : b)) >= needed;
            }
        }
        PyBuffer_Release(&sv);
        PyList_SET_ITEM(out, j, Py_NewRef(ok ? Py_True : Py_False));
    }
    PyBuffer_Release(&rv);
    Py_DECREF(samples);
    Py_DECREF(sizes);
    return out;
fail_out:
    Py_CLEAR(out);
fail:
    PyBuffer_Release(&rv);
fail_seq:
    Py_DECREF(samples);
    Py_DECREF(sizes);
    return out;
}

/* ------------------------------------------------------------------------------------------------ */
/* ef_encode / ef_decode: Elias-Fano codes of sorted record keys                                    */

static size_t ef_bits(size_t n, uint32_t top, int l) { return n * (size_t)l + n + ((size_t)top >> l); }

static PyObject *ef_encode(PyObject *self, PyObject *args) {
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O", &obj))
        return NULL;
    Py_buffer kv;
    if (get_buffer(obj, &kv, 4, "keys") < 0)
        return NULL;
    const uint32_t *k = (const uint32_t *)kv.buf;
    size_t n = (size_t)(kv.len / 4);
    PyObject *out = NULL;
    if (!n) {
        out = PyBytes_FromStringAndSize(NULL, 0);
        goto done;
    }
    for (size_t i = 1; i < n; i++)
        if (k[i] < k[i - 1]) {
            out = Py_None;
            Py_INCREF(out);
            goto done;
        }
    uint32_t top = k[n - 1];
    int l = 0;
    for (int c = 1; c < 32; c++)
        if (ef_bits(n, top, c) < ef_bits(n, top, l))
            l = c;
    size_t bits = ef_bits(n, top, l), nbytes = 1 + (bits + 7) / 8;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
    if (!out)
        goto done;
    uint8_t *b = (uint8_t *)PyBytes_AS_STRING(out);
    memset(b, 0, nbytes);
    b[0] = (uint8_t)l;
    uint8_t *bits_at = b + 1;
    uint64_t mask = l ? (1ULL << l) - 1 : 0, acc = 0;
    int held = 0; /* bits in acc, written out a byte at a time */
    uint8_t *w = bits_at;
    for (size_t i = 0; i < n; i++) {
        acc |= ((uint64_t)k[i] & mask) << held;
        held += l;
        while (held >= 8) {
            *w++ = (uint8_t)acc;
            acc >>= 8;
            held -= 8;
        }
    }
    if (held)
        *w = (uint8_t)acc; /* the high part's first bits are ORed in after it */
    size_t base = n * (size_t)l;
    for (size_t i = 0; i < n; i++) {
        size_t at = base + ((size_t)k[i] >> l) + i;
        bits_at[at >> 3] |= (uint8_t)(1u << (at & 7));
    }
done:
    PyBuffer_Release(&kv);
    return out;
}

/* the n keys of the code at offset into k; the offset past it, or -1 with an exception set */
static Py_ssize_t ef_decode_one(const uint8_t *buf, size_t len, Py_ssize_t offset, Py_ssize_t n, uint32_t *k) {
    if (!n)
        return offset;
    if ((size_t)offset + 1 > len || buf[offset] > 31) {
        PyErr_Format(PyExc_ValueError, "ef_decode: no valid code at offset %zd", offset);
        return -1;
    }
    int l = buf[offset];
    const uint8_t *b = buf + offset + 1;
    size_t avail = (len - (size_t)offset - 1) * 8, base = (size_t)n * (size_t)l;
    if (base > avail) {
        PyErr_SetString(PyExc_ValueError, "ef_decode: code truncated");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t at = (size_t)i * (size_t)l;
        uint64_t w = 0;
        size_t first = at >> 3, last = (at + (size_t)l + 7) >> 3; /* the bytes holding the l bits */
        for (size_t j = first; j < last && j < avail / 8; j++)
            w |= (uint64_t)b[j] << (8 * (j - first));
        k[i] = l ? (uint32_t)((w >> (at & 7)) & ((1ULL << l) - 1)) : 0;
    }
    Py_ssize_t found = 0;
    size_t at = base;
    while (found < n && at < avail) {
        uint8_t byte = b[at >> 3] >> (at & 7);
        if (!byte) {
            at = (at | 7) + 1;
            continue;
        }
        at += (size_t)__builtin_ctz(byte);
        k[found] |= (uint32_t)((at - base - (size_t)found) << l);
        found++;
        at++;
    }
    if (found < n) {
        PyErr_SetString(PyExc_ValueError, "ef_decode: code truncated");
        return -1;
    }
    return offset + 1 + (Py_ssize_t)((at + 7) / 8);
}

static PyObject *ef_decode(PyObject *self, PyObject *args) {
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs < 3) {
        PyErr_SetString(PyExc_TypeError, "ef_decode(buf, offset, n, ...): buf, offset and at least one n");
        return NULL;
    }
    Py_buffer bv;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, 0), &bv, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *keys = NULL, *out = NULL;
    Py_ssize_t offset = PyNumber_AsSsize_t(PyTuple_GET_ITEM(args, 1), PyExc_OverflowError), total = 0;
    Py_ssize_t ns[8];
    if (nargs - 2 > 8) {
        PyErr_SetString(PyExc_TypeError, "ef_decode: at most 8 codes at once");
        goto done;
    }
    for (Py_ssize_t j = 2; j < nargs; j++) {
        ns[j - 2] = PyNumber_AsSsize_t(PyTuple_GET_ITEM(args, j), PyExc_OverflowError);
        if (ns[j - 2] < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "ef_decode: negative n");
            goto done;
        }
        total += ns[j - 2];
    }
    if (offset < 0 || (size_t)offset > (size_t)bv.len) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "ef_decode: offset %zd outside a buffer of %zd bytes", offset, bv.len);
        goto done;
    }
    keys = PyByteArray_FromStringAndSize(NULL, total * 4);
    if (!keys)
        goto done;
    uint32_t *k = (uint32_t *)PyByteArray_AS_STRING(keys);
    for (Py_ssize_t j = 0; j < nargs - 2; j++) {
        offset = ef_decode_one((const uint8_t *)bv.buf, (size_t)bv.len, offset, ns[j], k);
        if (offset < 0)
            goto done;
        k += ns[j];
    }
    out = Py_BuildValue("(On)", keys, offset);
done:
    Py_XDECREF(keys);
    PyBuffer_Release(&bv);
    return out;
}

static PyMethodDef methods[] = {
    {"shingle_sketch", shingle_sketch, METH_VARARGS,
     "shingle_sketch(hashes, n, k): the bottom-k distinct word n-gram hashes, their first positions (uint8) "
     "and the number of distinct shingles."},
    {"simhash", simhash, METH_VARARGS,
     "simhash(hashes, weights): the weighted simhash when every sum of the weights is exact in float32, else None."},
    {"mrc_signature", mrc_signature, METH_VARARGS,
     "mrc_signature(folded, unique, rows, cols, values, part_norm): the MRC signature (float32 bytes) or None."},
    {"containment_many", containment_many, METH_VARARGS,
     "containment_many(a, a_total, bs, b_totals, min_size): [(containment, resemblance)] of a with each b."},
    {"term_hashes", term_hashes, METH_VARARGS,
     "term_hashes(tokens, cache, make=None, cap=0): the cached term hashes of tokens (stop words, cached as None, "
     "left out) as uint64 bytes; a miss's from make(token), cached while the cache holds fewer than cap, or "
     "without make the list of tokens not in the cache."},
    {"tdw_sums", tdw_sums, METH_VARARGS,
     "tdw_sums(parts, weights): each distinct hash of the parts with the sum of its parts' weights (when "
     "positive): (uint64 bytes, float32 bytes)."},
    {"sketch_keys", sketch_keys, METH_VARARGS,
     "sketch_keys(hashes, positions): the distinct 24-bit keys of uint64 hashes, sorted (uint32 bytes), each "
     "with the lowest position of its hashes (uint8 bytes)."},
    {"prefix_positional_many", prefix_positional_many, METH_VARARGS,
     "prefix_positional_many(r, samples, sizes, jaccard, factor): the comparison reducer's prefix and "
     "positional filters of r against each sampled set."},
    {"ef_encode", ef_encode, METH_VARARGS,
     "ef_encode(keys): sorted uint32 keys as an Elias-Fano code (bytes), or None when they are not sorted."},
    {"ef_decode", ef_decode, METH_VARARGS,
     "ef_decode(buf, offset, n, ...): the keys (uint32 bytes) of consecutive Elias-Fano codes of n, ... keys "
     "from offset, and the offset past them."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "dedup._fast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fast(void) {
    for (int v = 0; v < 256; v++)
        for (int t = 0; t < 8; t++)
            SIGNS[v][t] = (v >> t) & 1 ? 1.0f : -1.0f;
    return PyModule_Create(&module);
}
