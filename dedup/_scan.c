/* dedup._scan: one pass over a page's HTML, in C (issue 14 item 5).
 *
 * scan(html: str, main: bool = True, own: str | None = None, lines: bool = True, max_tags: int = -1)
 *     -> tuple | None
 *
 * max_tags >= 0: main is taken as false when html holds more than max_tags '<' characters (counted while
 * the characters are copied: html.count("<") <= max_tags, without a second pass over the page).
 *
 * Tokenizes the HTML (tags, attributes, comments, doctype, raw text of script/style, RCDATA of
 * title/textarea, numeric and HTML5 named character references) and builds the element tree as
 * lxml's parser (libxml2 2.14) builds it for the pages it reads: a stack of open elements, void
 * elements, a start tag that closes the open element it ends (a block closes an open <p>, li/dt/dd/
 * tr/td/th/option close their open siblings), an end tag that closes up to the nearest open element
 * of its name unless a stronger one (a div, a table cell) is in between, implied html/head/body, at
 * most 256 open elements (libxml2 stops reading a page nested deeper), and nothing after </html>.
 * From that tree, in C:
 *
 *   the tagged fields of dedup.page._fields (title, meta keywords/description, h1-h6, b/strong,
 *   anchors with an href and the anchor count), texts with blanks folded as dedup.page._clean;
 *   the main-content lines of the native extractor (benchmarks/spike_onepass.py's "lxml" walk: block
 *   tags break lines; boilerplate elements skipped; blocks inside a link and rows of links left out;
 *   the page's one <article> when it has exactly one), and the prose lines dedup.extract._prose keeps;
 *   the listing reader's teasers (dedup.extract.teasers), each as (text, block text).
 *
 * scan(html, main, own, lines=False): lines and prose None (the default extractor's reading: resiliparse gives
 * the main text), the rest as with lines.
 *
 * Returns (title, keywords, description, headings, bold, anchors, anchor_count, lines, teasers, nodes, prose,
 * article, marked)
 * with headings [(level, text)], bold [text], anchors [(href, label, same)] (non-empty labels only; same:
 * the href's host is `own`, the page's host, as dedup.page._href_host reads it, None when own is not
 * given or Python must read that href), lines the main-content lines ("\n" between) or None when main
 * is false, teasers [(text, block_text)], nodes the number of
 * elements and text nodes (0: lxml finds no document in it either), prose the lines dedup.extract._prose
 * keeps of lines (with the page's headings; None with lines), article (start, end, html) of the page's one
 * <article> element when it has exactly one and lines are not asked for (resiliparse's input), else None: its
 * source span, from its start tag's '<' to its
 * end tag's end, or to where the tree builder closes it (the '<' of the tag that closes it, or the input's
 * end), and html that source with the comments in it left out (as lxml's tree, parsed without comments,
 * has it: a comment after a <footer> changes what resiliparse keeps of it), marked True when a comment opens
 * a part not for indexing (<!--stopindex-->, <!--googleoff: ...-->, <!--noindex-->: dedup/indexmarks.py).
 * None when the input holds a lone
 * surrogate (lxml refuses such a str: the caller takes its usual path).
 *
 * Bounded: every read is checked against the input's length; the tree is at most 256 elements
 * deep, so the recursive walks are too; memory grows with the input (a few times its size).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <string.h>

#include "_entities.h"

#define MAX_DEPTH 256 /* libxml2's limit of open elements (html included) */

/* ---------------------------------------------------------------------------------------------- */
/* known tags: their ids are their index here                                                       */
enum {
    T_HTML, T_HEAD, T_BODY, T_TITLE, T_META, T_A, T_B, T_STRONG, T_H1, T_H2, T_H3, T_H4, T_H5, T_H6,
    T_ARTICLE, T_MAIN, T_P, T_DIV, T_LI, T_DD, T_DT, T_TD, T_TH, T_TR, T_BR, T_SECTION, T_HEADER,
    T_FOOTER, T_UL, T_OL, T_DL, T_TABLE, T_BLOCKQUOTE, T_FIGURE, T_FIGCAPTION, T_ADDRESS, T_ASIDE,
    T_NAV, T_PRE, T_HR, T_FORM, T_CENTER, T_CAPTION, T_TBODY, T_THEAD, T_TFOOT, T_FIELDSET, T_SCRIPT,
    T_STYLE, T_NOSCRIPT, T_TEMPLATE, T_IFRAME, T_TEXTAREA, T_INPUT, T_BUTTON, T_SELECT, T_OPTION,
    T_OBJECT, T_EMBED, T_SVG, T_MAP, T_XMP, T_NOEMBED, T_NOFRAMES, T_PLAINTEXT, T_BASE, T_LINK,
    T_AREA, T_BASEFONT, T_COL, T_FRAME, T_ISINDEX, T_PARAM, T_IMG, T_BIG, T_I, T_S, T_SMALL,
    T_STRIKE, T_TT, T_U, T_FONT, T_SPAN, T_DIR, T_MENU, T_LEGEND, T_COLGROUP, T_OPTGROUP,
    T_FRAMESET, T_ABBR, T_BDO, T_CITE, T_CODE, T_DFN, T_KBD, T_Q, T_SAMP, T_SUB, T_SUP, T_VAR, T_EM, T_LISTING, T_KNOWN
};
static const char *TAG_NAMES[T_KNOWN] = {
    "html", "head", "body", "title", "meta", "a", "b", "strong", "h1", "h2", "h3", "h4", "h5", "h6",
    "article", "main", "p", "div", "li", "dd", "dt", "td", "th", "tr", "br", "section", "header",
    "footer", "ul", "ol", "dl", "table", "blockquote", "figure", "figcaption", "address", "aside",
    "nav", "pre", "hr", "form", "center", "caption", "tbody", "thead", "tfoot", "fieldset", "script",
    "style", "noscript", "template", "iframe", "textarea", "input", "button", "select", "option",
    "object", "embed", "svg", "map", "xmp", "noembed", "noframes", "plaintext", "base", "link",
    "area", "basefont", "col", "frame", "isindex", "param", "img", "big", "i", "s", "small",
    "strike", "tt", "u", "font", "span", "dir", "menu", "legend", "colgroup", "optgroup",
    "frameset", "abbr", "bdo", "cite", "code", "dfn", "kbd", "q", "samp", "sub", "sup", "var", "em", "listing"};

enum {
    F_VOID = 1, F_RAW = 2, F_RCDATA = 4, F_BLOCK = 8, F_SKIP = 16, F_PAGE = 32, F_XBLOCK = 64,
    F_KEEP = 128, F_HEADIMPLY = 256, F_PLAIN = 512
};
static unsigned int FLAGS[T_KNOWN];
static int PRIORITY[T_KNOWN];
/* CLOSES[new][top]: a start tag `new` closes the open element `top` (libxml2's htmlStartClose) */
static unsigned char CLOSES[T_KNOWN][T_KNOWN];

static void set_flags(unsigned int flag, const int *tags, int n) {
    for (int k = 0; k < n; k++) FLAGS[tags[k]] |= flag;
}
static void set_closes(const int *news, int nn, const int *tops, int nt) {
    for (int a = 0; a < nn; a++)
        for (int b = 0; b < nt; b++) CLOSES[news[a]][tops[b]] = 1;
}
#define N(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

static void init_tables(void) {
    static const int voids[] = {T_AREA, T_BASE, T_BASEFONT, T_BR, T_COL, T_FRAME, T_HR, T_IMG, T_INPUT,
                                T_ISINDEX, T_LINK, T_META, T_PARAM};
    static const int raws[] = {T_SCRIPT, T_STYLE, T_XMP, T_IFRAME, T_NOEMBED, T_NOFRAMES};
    static const int rcdata[] = {T_TITLE, T_TEXTAREA};
    /* benchmarks/spike_onepass.py's _BLOCK_TAGS: what breaks a line of the main text */
    static const int blocks[] = {T_P, T_DIV, T_LI, T_DD, T_DT, T_TD, T_TH, T_TR, T_BR, T_H1, T_H2, T_H3, T_H4,
                                 T_H5, T_H6, T_ARTICLE, T_SECTION, T_HEADER, T_FOOTER, T_UL, T_OL, T_DL,
                                 T_TABLE, T_BLOCKQUOTE, T_FIGURE, T_FIGCAPTION, T_ADDRESS, T_ASIDE, T_NAV,
                                 T_MAIN, T_PRE, T_HR, T_FORM, T_CENTER, T_CAPTION, T_TBODY, T_THEAD, T_TFOOT,
                                 T_FIELDSET};
    /* _SKIP_TAGS: never text */
    static const int skips[] = {T_SCRIPT, T_STYLE, T_NOSCRIPT, T_HEAD, T_TITLE, T_TEMPLATE, T_IFRAME, T_TEXTAREA,
                                T_INPUT, T_BUTTON, T_SELECT, T_OPTION, T_OBJECT, T_EMBED, T_SVG, T_NAV, T_MAP};
    static const int pages[] = {T_FOOTER, T_ASIDE};
    /* dedup.extract._BLOCKS: where a teaser's block text puts a blank */
    static const int xblocks[] = {T_P, T_DIV, T_LI, T_DD, T_DT, T_TD, T_TH, T_TR, T_BR, T_H1, T_H2, T_H3, T_H4,
                                  T_H5, T_H6, T_ARTICLE, T_SECTION, T_HEADER, T_FOOTER, T_UL, T_OL, T_DL,
                                  T_TABLE, T_BLOCKQUOTE, T_FIGURE, T_FIGCAPTION, T_ADDRESS, T_ASIDE, T_NAV,
                                  T_MAIN, T_PRE, T_HR};
    static const int keeps[] = {T_ARTICLE, T_MAIN, T_BODY};
    static const int headimply[] = {T_TITLE, T_META, T_LINK, T_STYLE, T_SCRIPT, T_BASE};
    set_flags(F_VOID, voids, N(voids));
    set_flags(F_RAW, raws, N(raws));
    set_flags(F_RCDATA, rcdata, N(rcdata));
    FLAGS[T_PLAINTEXT] |= F_PLAIN;
    set_flags(F_BLOCK, blocks, N(blocks));
    set_flags(F_SKIP, skips, N(skips));
    set_flags(F_PAGE, pages, N(pages));
    set_flags(F_XBLOCK, xblocks, N(xblocks));
    set_flags(F_KEEP, keeps, N(keeps));
    set_flags(F_HEADIMPLY, headimply, N(headimply));
    for (int k = 0; k < T_KNOWN; k++) PRIORITY[k] = 100;
    PRIORITY[T_DIV] = 150;
    PRIORITY[T_TD] = PRIORITY[T_TH] = 160;
    PRIORITY[T_TR] = 170;
    PRIORITY[T_THEAD] = PRIORITY[T_TBODY] = PRIORITY[T_TFOOT] = 180;
    PRIORITY[T_TABLE] = 190;
    PRIORITY[T_HEAD] = PRIORITY[T_BODY] = 200;
    PRIORITY[T_HTML] = 220;

    /* measured on lxml 6.0 / libxml2 2.14: which open element each start tag closes */
    static const int hs[] = {T_H1, T_H2, T_H3, T_H4, T_H5, T_H6};
    { static const int n[] = {T_A}; static const int t[] = {T_A}; set_closes(n, 1, t, 1); }
    { static const int n[] = {T_FIELDSET}; static const int t[] = {T_A, T_H1, T_H2, T_H3, T_H4, T_H5, T_H6, T_LEGEND, T_P, T_PRE}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_TABLE}; static const int t[] = {T_A, T_H1, T_H2, T_H3, T_H4, T_H5, T_H6, T_P, T_PRE}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_TD, T_TH}; static const int t[] = {T_A, T_B, T_FONT, T_I, T_P, T_SPAN, T_TD, T_TH, T_U}; set_closes(n, 2, t, N(t)); }
    { static const int n[] = {T_DD, T_DL}; static const int t[] = {T_ADDRESS, T_DIR, T_DT, T_MENU, T_P, T_PRE}; set_closes(n, 2, t, N(t)); }
    { static const int n[] = {T_DT}; static const int t[] = {T_ADDRESS, T_DD, T_DIR, T_MENU, T_P, T_PRE}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_FORM}; static const int t[] = {T_ADDRESS, T_DIR, T_DL, T_FORM, T_H1, T_H2, T_H3, T_H4, T_H5, T_H6, T_MENU, T_OL, T_P, T_PRE, T_UL}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_LI}; static const int t[] = {T_ADDRESS, T_DL, T_H1, T_H2, T_H3, T_H4, T_H5, T_H6, T_LI, T_P, T_PRE}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_UL}; static const int t[] = {T_ADDRESS, T_DIR, T_MENU, T_P, T_PRE}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_CENTER}; static const int t[] = {T_B, T_FONT, T_I, T_P}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_P}; static const int t[] = {T_B, T_BIG, T_H1, T_H2, T_H3, T_H4, T_H5, T_H6, T_I, T_P, T_S, T_SMALL, T_STRIKE, T_TT, T_U}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_COL}; static const int t[] = {T_CAPTION, T_P}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_COLGROUP}; static const int t[] = {T_CAPTION, T_COLGROUP, T_P}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_TBODY}; static const int t[] = {T_CAPTION, T_COLGROUP, T_P, T_TBODY, T_TD, T_TFOOT, T_TH, T_THEAD, T_TR}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_TFOOT}; static const int t[] = {T_CAPTION, T_COLGROUP, T_P, T_TBODY, T_TD, T_TH, T_THEAD, T_TR}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_THEAD}; static const int t[] = {T_CAPTION, T_COLGROUP}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_TR}; static const int t[] = {T_CAPTION, T_COLGROUP, T_P, T_TD, T_TH, T_TR}; set_closes(n, 1, t, N(t)); }
    { static const int n[] = {T_OPTGROUP, T_OPTION}; static const int t[] = {T_OPTION}; set_closes(n, 2, t, 1); }
    { static const int n[] = {T_ADDRESS, T_MENU, T_PRE}; static const int t[] = {T_P, T_UL}; set_closes(n, 3, t, 2); }
    { static const int n[] = {T_BLOCKQUOTE, T_CAPTION, T_DIR, T_DIV, T_FRAMESET, T_HR, T_TITLE, T_OL, T_HEAD, T_BODY, T_XMP, T_LISTING}; static const int t[] = {T_P}; set_closes(n, N(n), t, 1); }
    { static const int t[] = {T_P}; set_closes(hs, 6, t, 1); }
    /* an open <head> is closed by these (HTML 4's body elements); anything else, HTML5's sections and
     * unknown tags included, goes into it */
    { static const int n[] = {T_A, T_ABBR, T_ADDRESS, T_B, T_BDO, T_BIG, T_BLOCKQUOTE, T_BODY, T_BR, T_CENTER, T_CITE,
                              T_CODE, T_DD, T_DFN, T_DIR, T_DIV, T_DL, T_DT, T_EM, T_FIELDSET, T_FONT, T_FORM,
                              T_FRAMESET, T_H1, T_H2, T_H3, T_H4, T_H5, T_H6, T_HR, T_I, T_IFRAME, T_IMG, T_KBD, T_LI,
                              T_MAP, T_MENU, T_OL, T_P, T_PRE, T_Q, T_S, T_SAMP, T_SMALL, T_SPAN, T_STRIKE, T_STRONG,
                              T_SUB, T_SUP, T_TABLE, T_TT, T_U, T_UL, T_VAR, T_XMP};
      static const int t[] = {T_HEAD}; set_closes(n, N(n), t, 1); }
}

/* ---------------------------------------------------------------------------------------------- */
/* growable buffers                                                                                 */
typedef struct { Py_UCS4 *p; Py_ssize_t n, cap; } UBuf;

static int ub_grow(UBuf *b, Py_ssize_t extra) {
    if (b->n + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) {
        if (cap > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)sizeof(Py_UCS4)) { PyErr_NoMemory(); return -1; }
        cap *= 2;
    }
    Py_UCS4 *p = PyMem_Realloc(b->p, (size_t)cap * sizeof(Py_UCS4));
    if (!p) { PyErr_NoMemory(); return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}
static inline int ub_put(UBuf *b, Py_UCS4 c) {
    if (b->n >= b->cap && ub_grow(b, 1) < 0) return -1;
    b->p[b->n++] = c;
    return 0;
}

/* room for one more element in the array *p of *cap elements of `size` bytes, n in use */
static int grow_array(void **p, int *cap, int n, size_t size) {
    if (n < *cap) return 0;
    if (*cap > INT_MAX / 2) { PyErr_NoMemory(); return -1; }
    int nc = *cap ? *cap * 2 : 256;
    void *q = PyMem_Realloc(*p, (size_t)nc * size);
    if (!q) { PyErr_NoMemory(); return -1; }
    *p = q;
    *cap = nc;
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* the tree: nodes in document order (an element before its descendants)                           */
typedef struct {
    int tag;      /* element: tag id >= 0; text: -1 */
    int parent, first, last, next, end; /* end: the last node of the subtree */
    Py_ssize_t ts, tl;                  /* text: span in S.text */
    int a0, an;                         /* element: its known attributes in S.attrs */
} Node;

enum { A_HREF, A_NAME, A_CONTENT, A_CLASS, A_ID, A_STYLE, A_ROLE, A_ARIA_HIDDEN, A_HIDDEN, A_KNOWN };
static const char *ATTR_NAMES[A_KNOWN] = {"href", "name", "content", "class", "id", "style", "role",
                                          "aria-hidden", "hidden"};
typedef struct { int id; Py_ssize_t vs, vl; } Attr;

typedef struct { Py_ssize_t start, len; int id; } Name;

typedef struct {
    const Py_UCS4 *s;
    Py_ssize_t n;
    Node *nodes;
    int nn, ncap;
    Attr *attrs;
    int na, acap;
    UBuf text;  /* decoded text of text nodes and attribute values */
    UBuf names; /* tag names beyond the known ones */
    Name *table;
    int tcap, tcount, next_id;
    int stack[MAX_DEPTH + 1];
    int sp;
    int stopped, head_seen, body_seen;
    int marked; /* a comment that opens a part not for indexing (dedup/indexmarks.py reads it) */
    int misplaced; /* html, head and body start tags dropped so far, less the end tags they dropped */
    /* the source span of the page's <article> elements: the first's start and end, how many there are;
     * at: where the token being read starts, closed: where an element it closes ends (the article's end) */
    Py_ssize_t at, closed, art_start, art_end;
    int articles, art_node;
    Py_ssize_t *cuts; /* the comments inside the first article: (start, end) pairs */
    int ncuts, ccap;
} S;

static void s_free(S *s) {
    PyMem_Free(s->nodes);
    PyMem_Free(s->attrs);
    PyMem_Free(s->text.p);
    PyMem_Free(s->names.p);
    PyMem_Free(s->table);
    PyMem_Free(s->cuts);
}

static inline int is_ws(Py_UCS4 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }
static inline int is_alpha(Py_UCS4 c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline int is_alnum(Py_UCS4 c) { return is_alpha(c) || (c >= '0' && c <= '9'); }
static inline Py_UCS4 lower(Py_UCS4 c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* tag names: a hash table over the known names and those the page adds */
static Py_hash_t name_hash(const Py_UCS4 *p, Py_ssize_t len) {
    Py_uhash_t h = 2166136261u;
    for (Py_ssize_t k = 0; k < len; k++) h = (h ^ p[k]) * 16777619u;
    return (Py_hash_t)(h & 0x7fffffff);
}

static int table_insert(S *s, Py_ssize_t start, Py_ssize_t len, int id);

static int table_grow(S *s) {
    Name *old = s->table;
    int oldcap = s->tcap;
    int cap = oldcap ? oldcap * 2 : 512;
    s->table = PyMem_Calloc((size_t)cap, sizeof(Name));
    if (!s->table) { s->table = old; PyErr_NoMemory(); return -1; }
    s->tcap = cap;
    s->tcount = 0;
    for (int k = 0; k < cap; k++) s->table[k].id = -1;
    for (int k = 0; k < oldcap; k++)
        if (old[k].id >= 0) table_insert(s, old[k].start, old[k].len, old[k].id);
    PyMem_Free(old);
    return 0;
}

static int table_insert(S *s, Py_ssize_t start, Py_ssize_t len, int id) {
    if ((s->tcount + 1) * 2 > s->tcap && table_grow(s) < 0) return -1;
    Py_hash_t h = name_hash(s->names.p + start, len);
    int mask = s->tcap - 1, k = (int)(h & mask);
    while (s->table[k].id >= 0) k = (k + 1) & mask;
    s->table[k].start = start;
    s->table[k].len = len;
    s->table[k].id = id;
    s->tcount++;
    return 0;
}

/* the id of the tag name p[0:len] (lowercase already), added when new; -1 on memory error */
static int tag_id(S *s, const Py_UCS4 *p, Py_ssize_t len) {
    Py_hash_t h = name_hash(p, len);
    int mask = s->tcap - 1, k = (int)(h & mask);
    while (s->table[k].id >= 0) {
        Name *e = &s->table[k];
        if (e->len == len && memcmp(s->names.p + e->start, p, (size_t)len * sizeof(Py_UCS4)) == 0) return e->id;
        k = (k + 1) & mask;
    }
    Py_ssize_t start = s->names.n;
    if (ub_grow(&s->names, len) < 0) return -1;
    memcpy(s->names.p + start, p, (size_t)len * sizeof(Py_UCS4));
    s->names.n += len;
    int id = s->next_id++;
    if (table_insert(s, start, len, id) < 0) return -1;
    return id;
}

static int init_names(S *s) {
    if (table_grow(s) < 0) return -1;
    Py_UCS4 buf[16];
    for (int t = 0; t < T_KNOWN; t++) {
        Py_ssize_t len = (Py_ssize_t)strlen(TAG_NAMES[t]);
        for (Py_ssize_t k = 0; k < len; k++) buf[k] = (Py_UCS4)(unsigned char)TAG_NAMES[t][k];
        if (tag_id(s, buf, len) != t) return -1;
    }
    return 0;
}

static inline unsigned int tflags(int tag) { return (tag >= 0 && tag < T_KNOWN) ? FLAGS[tag] : 0; }
static inline int tprio(int tag) { return (tag >= 0 && tag < T_KNOWN) ? PRIORITY[tag] : 100; }

/* ---------------------------------------------------------------------------------------------- */
/* tree building                                                                                    */
static int new_node(S *s, int tag, int parent) {
    if (grow_array((void **)&s->nodes, &s->ncap, s->nn, sizeof(Node)) < 0) return -1;
    int k = s->nn++;
    Node *x = &s->nodes[k];
    x->tag = tag;
    x->parent = parent;
    x->first = x->last = x->next = -1;
    x->end = k;
    x->ts = x->tl = 0;
    x->a0 = x->an = 0;
    if (parent >= 0) {
        Node *p = &s->nodes[parent];
        if (p->last >= 0) s->nodes[p->last].next = k;
        else p->first = k;
        p->last = k;
    }
    return k;
}

static inline int top(S *s) { return s->sp ? s->stack[s->sp - 1] : -1; }
static inline int top_tag(S *s) { return s->sp ? s->nodes[s->stack[s->sp - 1]].tag : -1; }

static void pop(S *s) {
    if (!s->sp) return;
    int k = s->stack[--s->sp];
    s->nodes[k].end = s->nn - 1;
    if (k == s->art_node) s->art_end = s->closed;
}

/* push a new element under the current one; -2 when the page is too deep (reading stops), -1 on error */
static int push(S *s, int tag, int a0, int an) {
    if (s->sp >= MAX_DEPTH) { s->stopped = 1; return -2; }
    int k = new_node(s, tag, top(s));
    if (k < 0) return -1;
    s->nodes[k].a0 = a0;
    s->nodes[k].an = an;
    s->stack[s->sp++] = k;
    if (tag == T_ARTICLE && s->articles++ == 0) {
        s->art_node = k;
        s->art_start = s->at;
    }
    if (tag == T_HEAD) s->head_seen = 1;
    if (tag == T_BODY) s->body_seen = 1;
    return k;
}

static int on_stack(S *s, int tag) {
    for (int k = s->sp - 1; k >= 0; k--)
        if (s->nodes[s->stack[k]].tag == tag) return 1;
    return 0;
}

/* libxml2's htmlCheckImplied: html, then head for head elements, else body */
static int implied(S *s, int tag) {
    if (tag == T_HTML) return 0;
    if (!s->sp) {
        int r = push(s, T_HTML, 0, 0);
        if (r < 0) return r;
    }
    if (tag == T_BODY || tag == T_HEAD) return 0;
    if (s->sp <= 1 && (tflags(tag) & F_HEADIMPLY)) {
        if (s->head_seen || s->body_seen) return 0;
        int r = push(s, T_HEAD, 0, 0);
        return r < 0 ? r : 0;
    }
    if (tag == T_NOFRAMES || tag == T_FRAME || tag == T_FRAMESET) return 0;
    if (s->body_seen) return 0;
    if (on_stack(s, T_BODY) || on_stack(s, T_HEAD)) return 0;
    int r = push(s, T_BODY, 0, 0);
    return r < 0 ? r : 0;
}

/* a start tag; returns the element's node, -3 when it was ignored, -2 stop, -1 error */
static int start_tag(S *s, int tag, int a0, int an) {
    if (tag == T_HTML) {
        if (s->sp) { s->misplaced++; return -3; }
        return push(s, T_HTML, a0, an);
    }
    while (s->sp) {
        int t = top_tag(s);
        if (tag < T_KNOWN && t >= 0 && t < T_KNOWN && CLOSES[tag][t]) { pop(s); continue; }
        break;
    }
    int r = implied(s, tag);
    if (r < 0) return r;
    /* a misplaced <head> or a second <body> is dropped, and so is the next </html>, </body> or </head> */
    if ((tag == T_HEAD && s->sp != 1) || (tag == T_BODY && on_stack(s, T_BODY))) { s->misplaced++; return -3; }
    return push(s, tag, a0, an);
}

/* an end tag: closes up to the nearest open element of its name, unless a stronger one is open above it */
static int end_tag(S *s, int tag) {
    if ((tag == T_HTML || tag == T_BODY || tag == T_HEAD) && s->misplaced > 0) {
        s->misplaced--;
        return 0;
    }
    int k;
    for (k = s->sp - 1; k >= 0; k--)
        if (s->nodes[s->stack[k]].tag == tag) break;
    if (k < 0) return 0;
    int prio = tprio(tag);
    for (int j = s->sp - 1; j > k; j--)
        if (tprio(s->nodes[s->stack[j]].tag) > prio) return 0;
    while (s->sp > k) pop(s);
    if (tag == T_HTML) s->stopped = 1; /* libxml2 reads nothing after </html> */
    return 0;
}

static int text_node(S *s, Py_ssize_t ts, Py_ssize_t tl) {
    if (tl <= 0 || s->stopped) return 0;
    int blank = 1;
    for (Py_ssize_t k = 0; k < tl; k++)
        if (!is_ws(s->text.p[ts + k])) { blank = 0; break; }
    int t = top_tag(s);
    if (blank) {
        if (t < 0 || t == T_HTML || t == T_HEAD) return 0;
    } else if (t < 0 || t == T_HTML || t == T_HEAD) {
        if (t == T_HEAD) pop(s);
        if (!s->sp) {
            int r = push(s, T_HTML, 0, 0);
            if (r < 0) return r == -2 ? 0 : -1;
        }
        if (!s->body_seen && !on_stack(s, T_BODY) && !on_stack(s, T_HEAD)) {
            int r = push(s, T_BODY, 0, 0);
            if (r < 0) return r == -2 ? 0 : -1;
        }
    }
    int parent = top(s), last = parent >= 0 ? s->nodes[parent].last : -1;
    if (last >= 0 && s->nodes[last].tag < 0 && s->nodes[last].ts + s->nodes[last].tl == ts) {
        s->nodes[last].tl += tl; /* text, a comment, text: one text node, as in lxml's tree */
        return 0;
    }
    int k = new_node(s, -1, parent);
    if (k < 0) return -1;
    s->nodes[k].ts = ts;
    s->nodes[k].tl = tl;
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* character references                                                                             */
static const Py_UCS4 CP1252[32] = {
    0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152,
    0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122,
    0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178};

static int entity_find(const char *name, int len) {
    int lo = 0, hi = ENTITY_COUNT - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const Entity *e = &ENTITIES[mid];
        int m = e->len < len ? e->len : len;
        int c = memcmp(e->name, name, (size_t)m);
        if (c == 0) c = (int)e->len - len;
        if (c == 0) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* the reference at s[i] == '&' (bounded by end): appends its characters to out and returns the index
 * after it, or returns i when it is no reference (the caller emits '&'). attr: in an attribute value */
static Py_ssize_t char_ref(const Py_UCS4 *src, Py_ssize_t i, Py_ssize_t end, int attr, UBuf *out, int *err) {
    Py_ssize_t j = i + 1;
    if (j < end && src[j] == '#') {
        j++;
        int hex = 0;
        if (j < end && (src[j] == 'x' || src[j] == 'X')) { hex = 1; j++; }
        Py_ssize_t d0 = j;
        Py_UCS4 v = 0;
        while (j < end) {
            Py_UCS4 c = src[j];
            int dv;
            if (c >= '0' && c <= '9') dv = (int)(c - '0');
            else if (hex && c >= 'a' && c <= 'f') dv = (int)(c - 'a' + 10);
            else if (hex && c >= 'A' && c <= 'F') dv = (int)(c - 'A' + 10);
            else break;
            if (v <= 0x10FFFF) v = v * (hex ? 16 : 10) + (Py_UCS4)dv;
            j++;
        }
        if (j == d0) return i;
        if (j < end && src[j] == ';') j++;
        if (v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) v = 0xFFFD;
        else if (v >= 0x80 && v <= 0x9F) v = CP1252[v - 0x80];
        if (ub_put(out, v) < 0) *err = 1;
        return j;
    }
    char name[ENTITY_MAXLEN + 2];
    int m = 0;
    while (j + m < end && m < ENTITY_MAXLEN && is_alnum(src[j + m])) {
        name[m] = (char)src[j + m];
        m++;
    }
    if (m == 0) return i;
    int found = -1, flen = 0;
    if (j + m < end && src[j + m] == ';') {
        name[m] = ';';
        found = entity_find(name, m + 1);
        if (found >= 0) flen = m + 1;
    }
    if (found < 0) {
        for (int L = m < 8 ? m : 8; L >= 2; L--) { /* legacy names without ';' are at most 6 long */
            found = entity_find(name, L);
            if (found >= 0) { flen = L; break; }
        }
    }
    if (found < 0) return i;
    if (attr && name[flen - 1] != ';' && j + flen < end && (src[j + flen] == '=' || is_alnum(src[j + flen])))
        return i;
    const Entity *e = &ENTITIES[found];
    if (ub_put(out, e->cp[0]) < 0) *err = 1;
    if (e->cp[1] && ub_put(out, e->cp[1]) < 0) *err = 1;
    return j + flen;
}

/* characters of text src[a:b] into out: references decoded (when refs), NUL as U+FFFD */
static int decode(const Py_UCS4 *src, Py_ssize_t a, Py_ssize_t b, int refs, int attr, UBuf *out) {
    if (ub_grow(out, b - a) < 0) return -1;
    int err = 0;
    Py_ssize_t i = a;
    while (i < b) {
        Py_ssize_t j = i; /* a run of plain characters, copied at once */
        while (j < b && src[j] != '&' && src[j] != 0) j++;
        if (j > i) {
            memcpy(out->p + out->n, src + i, (size_t)(j - i) * sizeof(Py_UCS4));
            out->n += j - i;
            i = j;
            if (i >= b) break;
        }
        Py_UCS4 c = src[i];
        if (c == '&' && refs) {
            Py_ssize_t j = char_ref(src, i, b, attr, out, &err);
            if (err) return -1;
            if (j > i) { i = j; continue; }
        }
        if (c == 0) c = 0xFFFD;
        if (ub_put(out, c) < 0) return -1;
        i++;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* the tokenizer                                                                                    */
static Py_ssize_t find_gt(const Py_UCS4 *p, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && p[i] != '>') i++;
    return i; /* n when none */
}

/* the end of a comment begun at i ("<!--"): the index after it, n when it runs to the end */
static Py_ssize_t comment_end(const Py_UCS4 *p, Py_ssize_t i, Py_ssize_t n) {
    Py_ssize_t j = i + 4;
    if (j < n && p[j] == '>') return j + 1;
    if (j + 1 < n && p[j] == '-' && p[j + 1] == '>') return j + 2;
    for (; j + 2 < n; j++) {
        if (p[j] == '-' && p[j + 1] == '-') {
            if (p[j + 2] == '>') return j + 3;
            if (p[j + 2] == '!' && j + 3 < n && p[j + 3] == '>') return j + 4;
        }
    }
    return n;
}

/* the comment p[i:j] ("<!--" at i) opens a part not for indexing: stopindex, googleoff or noindex after
 * blanks, lowercase as their tools write them (dedup/indexmarks.py cuts the part; this only says there is one) */
static int index_mark(const Py_UCS4 *p, Py_ssize_t i, Py_ssize_t j) {
    static const char *marks[3] = {"stopindex", "googleoff", "noindex"};
    i += 4;
    while (i < j && is_ws(p[i])) i++;
    for (int w = 0; w < 3; w++) {
        Py_ssize_t k = 0;
        while (marks[w][k] && i + k < j && p[i + k] == (Py_UCS4)(unsigned char)marks[w][k]) k++;
        if (!marks[w][k]) return 1;
    }
    return 0;
}

/* p[i:] begins with `name` (any case) followed by a blank, '/', '>' or the end */
static int name_at(const Py_UCS4 *p, Py_ssize_t i, Py_ssize_t n, const char *name) {
    Py_ssize_t len = (Py_ssize_t)strlen(name);
    if (i + len > n) return 0;
    for (Py_ssize_t k = 0; k < len; k++)
        if (lower(p[i + k]) != (Py_UCS4)(unsigned char)name[k]) return 0;
    Py_ssize_t after = i + len;
    return after >= n || is_ws(p[after]) || p[after] == '/' || p[after] == '>';
}

/* where raw text of `tag` ends: the index of "</name" followed by a blank, '/' or '>' (n when none).
 * A script's text has HTML5's escape states: after "<!--", a "<script" opens a nested script whose
 * "</script>" does not end the outer one (document.write('<script ...></script>') in a comment). */
static Py_ssize_t raw_end(S *s, Py_ssize_t i, int tag) {
    const Py_UCS4 *p = s->s;
    Py_ssize_t n = s->n;
    const char *name = TAG_NAMES[tag];
    int script = tag == T_SCRIPT, state = 0; /* 0 data, 1 escaped, 2 double escaped */
    for (; i + 1 < n; i++) {
        Py_UCS4 c = p[i];
        if (c == '<') {
            if (p[i + 1] == '/' && name_at(p, i + 2, n, name)) {
                if (state < 2) return i;
                state = 1;
                i += 7;
            } else if (script && state == 0 && i + 3 < n && p[i + 1] == '!' && p[i + 2] == '-' && p[i + 3] == '-') {
                state = 1;
                i += 1; /* the dashes may close it at once: "<!-->" */
            } else if (state == 1 && name_at(p, i + 1, n, "script")) {
                state = 2;
                i += 6;
            }
        } else if (c == '-' && state && i + 2 < n && p[i + 1] == '-' && p[i + 2] == '>') {
            state = 0;
            i += 2;
        }
    }
    return n;
}

static int eq_ci(const Py_UCS4 *p, Py_ssize_t len, const char *w);

/* the known attribute p[0:len] names (any case), or -1: most attributes are told apart by their length */
static int attr_id(const Py_UCS4 *p, Py_ssize_t len) {
    int a = -1, b = -1;
    switch (len) {
    case 2: a = A_ID; break;
    case 4: a = A_HREF; b = lower(p[0]) == 'n' ? A_NAME : A_ROLE; break;
    case 5: a = A_CLASS; b = A_STYLE; break;
    case 6: a = A_HIDDEN; break;
    case 7: a = A_CONTENT; break;
    case 11: a = A_ARIA_HIDDEN; break;
    default: return -1;
    }
    if (eq_ci(p, len, ATTR_NAMES[a])) return a;
    if (b >= 0 && eq_ci(p, len, ATTR_NAMES[b])) return b;
    return -1;
}

static int add_attr(S *s, int id, Py_ssize_t vs, Py_ssize_t vl) {
    if (grow_array((void **)&s->attrs, &s->acap, s->na, sizeof(Attr)) < 0) return -1;
    s->attrs[s->na].id = id;
    s->attrs[s->na].vs = vs;
    s->attrs[s->na].vl = vl;
    s->na++;
    return 0;
}

/* a start tag at i ('<' then a letter): returns the index after it, n when the page ends inside it */
static Py_ssize_t parse_start(S *s, Py_ssize_t i, int *err) {
    const Py_UCS4 *p = s->s;
    Py_ssize_t n = s->n;
    Py_UCS4 nbuf[64];
    Py_ssize_t j = i + 1, nlen = 0, nstart = j;
    while (j < n && !is_ws(p[j]) && p[j] != '/' && p[j] != '>') j++;
    nlen = j - nstart;
    /* the lowercase name, in nbuf when short, else in the names buffer's scratch end */
    Py_UCS4 *name = nbuf;
    UBuf big = {0};
    if (nlen > 64) {
        if (ub_grow(&big, nlen) < 0) { *err = 1; return n; }
        name = big.p;
    }
    for (Py_ssize_t k = 0; k < nlen; k++) {
        Py_UCS4 c = p[nstart + k];
        name[k] = c == 0 ? 0xFFFD : lower(c);
    }
    int tag = tag_id(s, name, nlen);
    PyMem_Free(big.p);
    if (tag < 0) { *err = 1; return n; }
    int a0 = s->na, seen = 0, selfclose = 0;
    for (;;) {
        while (j < n && is_ws(p[j])) j++;
        if (j >= n) { s->na = a0; return n; }
        if (p[j] == '>') { j++; break; }
        if (p[j] == '/') {
            if (j + 1 < n && p[j + 1] == '>') { selfclose = 1; j += 2; break; }
            j++;
            continue;
        }
        Py_ssize_t an0 = j;
        j++; /* the first character is the name's, even '=' */
        while (j < n && !is_ws(p[j]) && p[j] != '/' && p[j] != '>' && p[j] != '=') j++;
        int id = attr_id(p + an0, j - an0);
        while (j < n && is_ws(p[j])) j++;
        Py_ssize_t vs = s->text.n, vl = 0;
        if (j < n && p[j] == '=') {
            j++;
            while (j < n && is_ws(p[j])) j++;
            if (j >= n) { s->na = a0; return n; }
            if (p[j] == '"' || p[j] == '\'') {
                Py_UCS4 q = p[j];
                Py_ssize_t v0 = ++j;
                while (j < n && p[j] != q) j++;
                if (j >= n) { s->na = a0; return n; }
                if (id >= 0 && !(seen & (1 << id))) {
                    if (decode(p, v0, j, 1, 1, &s->text) < 0) { *err = 1; return n; }
                    vl = s->text.n - vs;
                }
                j++;
            } else if (p[j] != '>') {
                Py_ssize_t v0 = j;
                while (j < n && !is_ws(p[j]) && p[j] != '>') j++;
                if (id >= 0 && !(seen & (1 << id))) {
                    if (decode(p, v0, j, 1, 1, &s->text) < 0) { *err = 1; return n; }
                    vl = s->text.n - vs;
                }
            }
        }
        if (id >= 0 && !(seen & (1 << id))) {
            seen |= 1 << id;
            if (add_attr(s, id, vs, vl) < 0) { *err = 1; return n; }
        }
    }
    int an = s->na - a0;
    int k = start_tag(s, tag, a0, an);
    if (k == -1) { *err = 1; return n; }
    if (k < 0) return k == -2 ? n : j; /* too deep: reading stops; or ignored */
    unsigned int f = tflags(tag);
    if (selfclose || (f & F_VOID)) {
        s->closed = j;
        pop(s);
        return j;
    }
    if (f & (F_RAW | F_RCDATA | F_PLAIN)) {
        Py_ssize_t e = (f & F_PLAIN) ? n : raw_end(s, j, tag);
        Py_ssize_t ts = s->text.n;
        if (decode(p, j, e, (f & F_RCDATA) != 0, 0, &s->text) < 0) { *err = 1; return n; }
        if (s->text.n > ts) {
            int t = new_node(s, -1, k);
            if (t < 0) { *err = 1; return n; }
            s->nodes[t].ts = ts;
            s->nodes[t].tl = s->text.n - ts;
        }
        pop(s);
        if (e >= n) return n;
        Py_ssize_t g = find_gt(p, e, n);
        return g < n ? g + 1 : n;
    }
    return j;
}

static Py_ssize_t parse_end(S *s, Py_ssize_t i, int *err) {
    const Py_UCS4 *p = s->s;
    Py_ssize_t n = s->n;
    Py_UCS4 nbuf[64];
    Py_ssize_t j = i + 2, nstart = j;
    while (j < n && !is_ws(p[j]) && p[j] != '/' && p[j] != '>') j++;
    Py_ssize_t nlen = j - nstart;
    Py_ssize_t g = find_gt(p, j, n);
    if (g >= n) return n; /* the page ends inside the tag */
    if (nlen > 64) return g + 1; /* no element has such a name open: ignored */
    for (Py_ssize_t k = 0; k < nlen; k++) {
        Py_UCS4 c = p[nstart + k];
        nbuf[k] = c == 0 ? 0xFFFD : lower(c);
    }
    int tag = tag_id(s, nbuf, nlen);
    if (tag < 0) { *err = 1; return n; }
    if (tag == T_ARTICLE) s->closed = g + 1; /* its end tag's end; an ancestor's end tag closes it at its '<' */
    end_tag(s, tag);
    return g + 1;
}

static int build(S *s) {
    const Py_UCS4 *p = s->s;
    Py_ssize_t n = s->n, i = 0;
    int err = 0;
    Py_ssize_t run0 = s->text.n; /* the text being gathered */
    while (i < n && !s->stopped) {
        Py_UCS4 c = p[i];
        if (c != '<') {
            Py_ssize_t j = i;
            while (j < n && p[j] != '<') j++;
            if (decode(p, i, j, 1, 0, &s->text) < 0) return -1;
            i = j;
            continue;
        }
        Py_UCS4 d = i + 1 < n ? p[i + 1] : 0;
        int markup = is_alpha(d) || d == '!' || d == '?' || (d == '/' && i + 2 < n);
        if (!markup) {
            if (ub_put(&s->text, '<') < 0) return -1;
            i++;
            continue;
        }
        /* markup: the text before it becomes a node; an element the markup closes ends where it starts */
        s->at = s->closed = i;
        if (text_node(s, run0, s->text.n - run0) < 0) return -1;
        run0 = s->text.n;
        if (s->stopped) break;
        if (is_alpha(d)) {
            i = parse_start(s, i, &err);
        } else if (d == '/') {
            Py_UCS4 e = p[i + 2];
            if (is_alpha(e)) i = parse_end(s, i, &err);
            else if (e == '>') i += 3;
            else { Py_ssize_t g = find_gt(p, i + 2, n); i = g < n ? g + 1 : n; }
        } else if (d == '!' && i + 3 < n && p[i + 2] == '-' && p[i + 3] == '-') {
            Py_ssize_t c0 = i;
            i = comment_end(p, i, n);
            if (!s->marked) s->marked = index_mark(p, c0, i);
            if (s->articles == 1 && s->art_end < 0) { /* in the article: left out of its HTML, as lxml's tree has it */
                if (grow_array((void **)&s->cuts, &s->ccap, s->ncuts, 2 * sizeof(Py_ssize_t)) < 0) return -1;
                s->cuts[2 * s->ncuts] = c0;
                s->cuts[2 * s->ncuts + 1] = i;
                s->ncuts++;
            }
        } else {
            Py_ssize_t g = find_gt(p, i + 2, n);
            i = g < n ? g + 1 : n;
        }
        if (err) return -1;
        run0 = s->text.n;
    }
    if (!s->stopped) {
        s->at = s->closed = n;
        if (text_node(s, run0, s->text.n - run0) < 0) return -1;
    }
    while (s->sp) pop(s);
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* reading the tree                                                                                 */
static inline int is_space(Py_UCS4 c) { return Py_UNICODE_ISSPACE(c); }

typedef struct { UBuf *out; int started, pending; } Fold;

static int fold_put(Fold *f, const Py_UCS4 *p, Py_ssize_t len) {
    if (ub_grow(f->out, 2 * len + 1) < 0) return -1; /* a blank before each character at most */
    for (Py_ssize_t k = 0; k < len; k++) {
        Py_UCS4 c = p[k];
        if (is_space(c)) { f->pending = 1; continue; }
        if (f->pending && f->started) f->out->p[f->out->n++] = ' ';
        f->out->p[f->out->n++] = c;
        f->started = 1;
        f->pending = 0;
    }
    return 0;
}

static PyObject *ustr(const Py_UCS4 *p, Py_ssize_t len) {
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, p, len);
}

/* " ".join(text_content(el).split()) into a new str */
static PyObject *folded_text(S *s, int el, UBuf *scratch) {
    scratch->n = 0;
    Fold f = {scratch, 0, 0};
    for (int k = el + 1; k <= s->nodes[el].end; k++)
        if (s->nodes[k].tag < 0 && fold_put(&f, s->text.p + s->nodes[k].ts, s->nodes[k].tl) < 0) return NULL;
    return ustr(scratch->p, scratch->n);
}

static const Attr *get_attr(S *s, int el, int id) {
    const Node *x = &s->nodes[el];
    for (int k = 0; k < x->an; k++)
        if (s->attrs[x->a0 + k].id == id) return &s->attrs[x->a0 + k];
    return NULL;
}

static PyObject *attr_str(S *s, const Attr *a) { return ustr(s->text.p + a->vs, a->vl); }

static int attr_is(S *s, const Attr *a, const char *v) {
    Py_ssize_t len = (Py_ssize_t)strlen(v);
    if (a->vl != len) return 0;
    for (Py_ssize_t k = 0; k < len; k++)
        if (s->text.p[a->vs + k] != (Py_UCS4)(unsigned char)v[k]) return 0;
    return 1;
}

static int attr_is_lower(S *s, const Attr *a, const char *v) { /* name.lower() == v, v ASCII */
    Py_ssize_t len = (Py_ssize_t)strlen(v);
    if (a->vl != len) return 0;
    for (Py_ssize_t k = 0; k < len; k++) {
        Py_UCS4 c = s->text.p[a->vs + k];
        if (c == 0x130 || c == 0x212A) return 0; /* lowercase to two characters / to 'k': not equal to v */
        if (lower(c) != (Py_UCS4)(unsigned char)v[k]) return 0;
    }
    return 1;
}

/* boilerplate by attributes (spike_onepass._boiler_attrs) ------------------------------------------ */
static const char *ROLES[] = {"navigation", "contentinfo", "menu", "menubar", "dialog", "alert", "banner",
                              "complementary", "search"};
static const char *BOILER_WORDS[] = {
    "nav", "navbar", "navigation", "menu", "menubar", "footer", "sidebar", "breadcrumb", "breadcrumbs",
    "share", "sharing", "social", "comment", "comments", "ad", "ads", "advert", "advertisement", "banner",
    "promo", "popup", "modal", "cookie", "cookies", "newsletter", "skip", "hidden", "invisible", "masthead",
    "toolbar"};
static const char *BOILER_AFFIXES[] = {"nav", "navbar", "navigation", "menu", "footer", "breadcrumb",
                                       "breadcrumbs", "share", "sharing", "social", "comments", "ad", "ads",
                                       "advert", "promo", "newsletter", "cookie"};
static const char *KEEP_WORDS[] = {"wrap", "content", "article", "story", "main", "body", "post", "entry"};

static int eq_ci(const Py_UCS4 *p, Py_ssize_t len, const char *w) {
    Py_ssize_t k = 0;
    for (; k < len && w[k]; k++)
        if (lower(p[k]) != (Py_UCS4)(unsigned char)w[k]) return 0;
    return k == len && !w[k];
}

static int in_list(const Py_UCS4 *p, Py_ssize_t len, const char **list, int n) {
    if (len <= 0) return 0; /* no word of a list is empty */
    Py_UCS4 first = lower(p[0]); /* most words are told apart by their first letter */
    for (int k = 0; k < n; k++)
        if ((Py_UCS4)(unsigned char)list[k][0] == first && eq_ci(p, len, list[k])) return 1;
    return 0;
}

/* one class/id token is boilerplate: a word, or an affix joined by - or _ at its start or end */
static int boiler_token(const Py_UCS4 *p, Py_ssize_t len) {
    if (in_list(p, len, BOILER_WORDS, N(BOILER_WORDS))) return 1;
    for (Py_ssize_t k = 1; k < len; k++) /* an affix at the start, then - or _ */
        if ((p[k] == '-' || p[k] == '_') && in_list(p, k, BOILER_AFFIXES, N(BOILER_AFFIXES))) return 1;
    for (Py_ssize_t k = 0; k + 1 < len; k++) /* - or _ then an affix at the end */
        if ((p[k] == '-' || p[k] == '_') && in_list(p + k + 1, len - k - 1, BOILER_AFFIXES, N(BOILER_AFFIXES)))
            return 1;
    return 0;
}

static int boiler_value(const Py_UCS4 *p, Py_ssize_t len) {
    Py_ssize_t k = 0;
    while (k < len) {
        while (k < len && is_space(p[k])) k++;
        Py_ssize_t t0 = k;
        while (k < len && !is_space(p[k])) k++;
        if (k > t0 && boiler_token(p + t0, k - t0)) return 1;
    }
    return 0;
}

static int keep_value(const Py_UCS4 *p, Py_ssize_t len) {
    for (Py_ssize_t k = 0; k < len; k++) {
        for (int w = 0; w < N(KEEP_WORDS); w++) {
            const char *kw = KEEP_WORDS[w];
            Py_ssize_t m = 0;
            while (kw[m] && k + m < len && lower(p[k + m]) == (Py_UCS4)(unsigned char)kw[m]) m++;
            if (!kw[m]) return 1;
        }
    }
    return 0;
}

/* display\s*:\s*none or visibility\s*:\s*hidden, any case */
static int hidden_style(const Py_UCS4 *p, Py_ssize_t len) {
    static const char *keys[2] = {"display", "visibility"}, *vals[2] = {"none", "hidden"};
    for (Py_ssize_t k = 0; k < len; k++) {
        for (int w = 0; w < 2; w++) {
            Py_ssize_t j = k, m = 0;
            while (keys[w][m] && j < len && lower(p[j]) == (Py_UCS4)(unsigned char)keys[w][m]) { j++; m++; }
            if (keys[w][m]) continue;
            while (j < len && is_space(p[j])) j++;
            if (j >= len || p[j] != ':') continue;
            j++;
            while (j < len && is_space(p[j])) j++;
            m = 0;
            while (vals[w][m] && j < len && lower(p[j]) == (Py_UCS4)(unsigned char)vals[w][m]) { j++; m++; }
            if (!vals[w][m]) return 1;
        }
    }
    return 0;
}

static int boiler_attrs(S *s, int el) {
    const Node *x = &s->nodes[el];
    if (!x->an) return 0;
    if (get_attr(s, el, A_HIDDEN)) return 1;
    const Attr *a = get_attr(s, el, A_ARIA_HIDDEN);
    if (a && attr_is(s, a, "true")) return 1;
    a = get_attr(s, el, A_ROLE);
    if (a)
        for (int k = 0; k < N(ROLES); k++)
            if (attr_is(s, a, ROLES[k])) return 1;
    a = get_attr(s, el, A_STYLE);
    if (a && a->vl && hidden_style(s->text.p + a->vs, a->vl)) return 1;
    const Attr *cls = get_attr(s, el, A_CLASS), *ident = get_attr(s, el, A_ID);
    Py_ssize_t cl = cls ? cls->vl : 0, il = ident ? ident->vl : 0;
    if (!cl && !il) return 0;
    const Py_UCS4 *cp = cls ? s->text.p + cls->vs : NULL, *ip = ident ? s->text.p + ident->vs : NULL;
    int boiler = (cl && boiler_value(cp, cl)) || (il && boiler_value(ip, il));
    if (!boiler) return 0;
    if ((cl && keep_value(cp, cl)) || (il && keep_value(ip, il))) return 0;
    return !(tflags(x->tag) & F_KEEP);
}

static int boilerplate(S *s, int el, int depth) {
    unsigned int f = tflags(s->nodes[el].tag);
    if ((f & F_SKIP) || ((f & F_PAGE) && depth < 3)) return 1;
    return boiler_attrs(s, el);
}

#define LINE 0x2029
#define A0 0xE000
#define A1 0xE001

/* spike_onepass._walk: the children of el into out (depth: el's children's; link: inside a link) */
static int walk(S *s, int el, UBuf *out, int depth, int link, int skip_text) {
    for (int c = s->nodes[el].first; c >= 0; c = s->nodes[c].next) {
        const Node *x = &s->nodes[c];
        if (x->tag < 0) {
            if (skip_text) continue;
            if (ub_grow(out, x->tl) < 0) return -1;
            memcpy(out->p + out->n, s->text.p + x->ts, (size_t)x->tl * sizeof(Py_UCS4));
            out->n += x->tl;
            continue;
        }
        skip_text = 0;
        if (boilerplate(s, c, depth)) continue;
        unsigned int f = tflags(x->tag);
        if (f & F_BLOCK) {
            if (!link || x->tag == T_BR || x->tag == T_HR) {
                if (ub_put(out, LINE) < 0 || walk(s, c, out, depth + 1, 0, 0) < 0 || ub_put(out, LINE) < 0) return -1;
            }
        } else if (x->tag == T_A && !link) {
            if (ub_put(out, A0) < 0 || walk(s, c, out, depth + 1, 1, 0) < 0 || ub_put(out, A1) < 0) return -1;
        } else if (walk(s, c, out, depth + 1, link, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* MIN_WORDS and LINK_SHARE of dedup.extract: a line of at least LINE_WORDS words with at least half its
 * characters in links is a row of links, left out */
#define LINE_WORDS 20

/* Han and kana: Chinese and Japanese are written without blanks, so a line of them is one "word" to a count
 * of blanks and never reached LINE_WORDS (every such page fell back to trafilatura, 9-17 ms). Two of them
 * count as one word (dedup.text reads them as overlapping bigrams; a 20-word English sentence is ~40-50
 * characters of Japanese). Hangul is left out: Korean puts blanks between words. */
static inline int is_cjk(Py_UCS4 c) {
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF);
}

/* the lines of the walk's text raw[0:n] into out, one a line ("\n" between), blanks folded, link marks
 * removed, rows of links left out (spike_onepass._text_lines) */
static int text_lines(const Py_UCS4 *raw, Py_ssize_t n, UBuf *out) {
    Py_ssize_t k = 0;
    if (ub_grow(out, n + 1) < 0) return -1; /* a line never grows: folding and removing only shorten it */
    while (k <= n) {
        Py_ssize_t e = k;
        while (e < n && raw[e] != LINE) e++;
        /* the folded line with its marks: words (marks stick to them) joined by one blank */
        Py_ssize_t start = out->n, plain = 0, spaces = 0, linked = 0, cjk = 0;
        int marks = 0, pending = 0, started = 0, in_link = 0;
        for (Py_ssize_t j = k; j < e; j++) {
            Py_UCS4 c = raw[j];
            if (is_space(c)) { pending = 1; continue; }
            if (pending && started) { out->p[out->n++] = ' '; plain++; spaces++; if (in_link) linked++; }
            pending = 0;
            started = 1;
            out->p[out->n++] = c;
            if (c == A0) { marks = 1; in_link = 1; }
            else if (c == A1) in_link = 0;
            else { plain++; cjk += is_cjk(c); if (in_link) linked++; }
        }
        if (marks) {
            if (2 * spaces + cjk >= 2 * (LINE_WORDS - 1) && 2 * linked >= plain) { /* is_prose's count */
                out->n = start; /* a row of links */
            } else { /* the marks removed, blanks folded again */
                Py_ssize_t w = start;
                int pend = 0, st = 0;
                for (Py_ssize_t j = start; j < out->n; j++) {
                    Py_UCS4 c = out->p[j];
                    if (c == A0 || c == A1) continue;
                    if (c == ' ') { pend = 1; continue; }
                    if (pend && st) out->p[w++] = ' ';
                    pend = 0;
                    st = 1;
                    out->p[w++] = c;
                }
                out->n = w;
            }
        }
        if (out->n > start) out->p[out->n++] = '\n';
        k = e + 1;
    }
    if (out->n) out->n--; /* no "\n" after the last line */
    return 0;
}

/* the main-content lines into lines (out: the walk's raw text) */
static int main_lines(S *s, UBuf *out, UBuf *lines) {
    out->n = 0;
    if (!s->nn) return 0;
    int article = -1, articles = 0;
    for (int k = 0; k < s->nn && articles < 2; k++)
        if (s->nodes[k].tag == T_ARTICLE) { article = k; articles++; }
    int root = articles == 1 ? article : -1;
    if (root < 0)
        for (int c = s->nodes[0].first; c >= 0; c = s->nodes[c].next)
            if (s->nodes[c].tag == T_BODY) { root = c; break; }
    if (root < 0) root = 0;
    if (walk(s, root, out, 0, 0, s->nodes[root].tag == T_HTML) < 0) return -1;
    return text_lines(out->p, out->n, lines);
}

/* dedup.extract._legal: \u00a9|\(c\) ?(?:19|20)\d\d|\ball rights reserved\b|\bmay not be (?:re)?published\b
 * with IGNORECASE (under which i also matches U+0130 and U+0131, s U+017F, k U+212A) */
static inline int ci(Py_UCS4 c, char w) {
    if (lower(c) == (Py_UCS4)(unsigned char)w) return 1;
    return (w == 'i' && (c == 0x130 || c == 0x131)) || (w == 's' && c == 0x17F) || (w == 'k' && c == 0x212A);
}
static inline int is_word(Py_UCS4 c) { return c == '_' || Py_UNICODE_ISALNUM(c); }

/* the end of w matched at p[i:] (any case), or -1 */
static Py_ssize_t match_ci(const Py_UCS4 *p, Py_ssize_t len, Py_ssize_t i, const char *w) {
    for (; *w; w++, i++)
        if (i >= len || !ci(p[i], *w)) return -1;
    return i;
}

static int legal(const Py_UCS4 *p, Py_ssize_t len) {
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = p[i];
        if (c == 0xA9) return 1;
        Py_ssize_t j;
        if (c == '(' && (j = match_ci(p, len, i, "(c)")) >= 0) {
            if (j < len && p[j] == ' ') j++;
            if (j + 3 < len && ((p[j] == '1' && p[j + 1] == '9') || (p[j] == '2' && p[j + 1] == '0')) &&
                Py_UNICODE_ISDECIMAL(p[j + 2]) && Py_UNICODE_ISDECIMAL(p[j + 3]))
                return 1;
        }
        int a = ci(c, 'a'), m = !a && ci(c, 'm');
        if (!a && !m) continue;
        if (i > 0 && is_word(p[i - 1])) continue; /* \b before "all" and "may" */
        if (a && (j = match_ci(p, len, i, "all rights reserved")) >= 0 && (j == len || !is_word(p[j]))) return 1;
        if (m && (j = match_ci(p, len, i, "may not be ")) >= 0) {
            Py_ssize_t r = match_ci(p, len, j, "republished");
            if (r >= 0 && (r == len || !is_word(p[r]))) return 1;
            r = match_ci(p, len, j, "published");
            if (r >= 0 && (r == len || !is_word(p[r]))) return 1;
        }
    }
    return 0;
}

/* a line of at least MIN_WORDS words (MIN_WORDS - 1 blanks), at least half of them holding a letter: a row of
 * lottery numbers is not prose (dedup.extract._is_prose; words are runs of non-blanks between single blanks,
 * and two Han or kana characters count as one more lettered word: see is_cjk) */
static int is_prose(const Py_UCS4 *p, Py_ssize_t len) {
    Py_ssize_t words = 0, lettered = 0, cjk = 0; /* words: blanks + 1, as Python's line.split(" ") */
    int has = 0;
    for (Py_ssize_t k = 0; k <= len; k++) {
        if (k == len || p[k] == ' ') {
            words++;
            lettered += has;
            has = 0;
        } else {
            cjk += is_cjk(p[k]);
            if (!has && Py_UNICODE_ISALPHA(p[k])) has = 1;
        }
    }
    /* in half words: 2 * (words + cjk / 2) >= 2 * LINE_WORDS, and half of them lettered */
    return 2 * words + cjk >= 2 * LINE_WORDS && 2 * (2 * lettered + cjk) >= 2 * words + cjk;
}

#define HEADING_REACH 3 /* dedup.extract.HEADING_REACH */

/* dedup.extract._prose of lines[0:n] ("\n" between lines): the prose lines without a legal notice, and
 * the heading lines (heads: the page's heading texts, the k-th at hspan[2k], its length hspan[2k + 1]) that
 * prose follows within
 * HEADING_REACH lines */
static int prose_lines(const Py_UCS4 *lines, Py_ssize_t n, const UBuf *heads, const Py_ssize_t *hspan, int nheads,
                       UBuf *out) {
    if (ub_grow(out, n + 1) < 0) return -1;
    Py_ssize_t k = 0;
    int first = 1;
    while (k <= n && n > 0) {
        Py_ssize_t e = k;
        while (e < n && lines[e] != '\n') e++;
        const Py_UCS4 *p = lines + k;
        Py_ssize_t len = e - k;
        int keep = 0;
        if (is_prose(p, len)) {
            keep = !legal(p, len);
        } else {
            int heading = 0;
            for (int h = 0; h < nheads && !heading; h++)
                heading = hspan[2 * h + 1] == len &&
                          memcmp(heads->p + hspan[2 * h], p, (size_t)len * sizeof(Py_UCS4)) == 0;
            if (heading) { /* prose within the next HEADING_REACH lines */
                Py_ssize_t q = e;
                for (int r = 0; r < HEADING_REACH && q < n && !keep; r++) {
                    Py_ssize_t q0 = q + 1, q1 = q0;
                    while (q1 < n && lines[q1] != '\n') q1++;
                    keep = is_prose(lines + q0, q1 - q0);
                    q = q1;
                }
            }
        }
        if (keep) {
            if (!first) out->p[out->n++] = '\n';
            memcpy(out->p + out->n, p, (size_t)len * sizeof(Py_UCS4));
            out->n += len;
            first = 0;
        }
        k = e + 1;
    }
    return 0;
}

/* teasers (dedup.extract.teasers) ------------------------------------------------------------------ */
static int block_text(S *s, int el, Fold *f) {
    unsigned int bl = tflags(s->nodes[el].tag) & F_XBLOCK;
    if (bl) f->pending = 1;
    for (int c = s->nodes[el].first; c >= 0; c = s->nodes[c].next) {
        const Node *x = &s->nodes[c];
        if (x->tag < 0) {
            if (fold_put(f, s->text.p + x->ts, x->tl) < 0) return -1;
        } else if (block_text(s, c, f) < 0) {
            return -1;
        }
    }
    if (bl) f->pending = 1;
    return 0;
}

static inline int is_heading(int tag) { return tag >= T_H1 && tag <= T_H6; }

/* per node: has text (not only blanks) in its subtree; an element sibling before / after it has */
typedef struct { unsigned char *text, *before, *after; } Marks;

static int marks(S *s, Marks *m) {
    m->text = PyMem_Calloc((size_t)s->nn, 5);
    if (!m->text) { PyErr_NoMemory(); return -1; }
    m->before = m->text + s->nn;
    m->after = m->before + s->nn;
    unsigned char *seen = m->after + s->nn, *seen_back = seen + s->nn; /* per parent, so far */
    for (int k = s->nn - 1; k >= 0; k--) {
        Node *x = &s->nodes[k];
        if (x->tag < 0) {
            for (Py_ssize_t j = 0; j < x->tl; j++)
                if (!is_space(s->text.p[x->ts + j])) { m->text[k] = 1; break; }
        }
        if (m->text[k] && x->parent >= 0) m->text[x->parent] = 1;
    }
    /* element siblings only (lxml's itersiblings): a parent's children come in index order */
    for (int k = 0; k < s->nn; k++) {
        int p = s->nodes[k].parent;
        if (s->nodes[k].tag < 0 || p < 0) continue;
        m->before[k] = seen[p];
        seen[p] |= m->text[k];
    }
    for (int k = s->nn - 1; k >= 0; k--) {
        int p = s->nodes[k].parent;
        if (s->nodes[k].tag < 0 || p < 0) continue;
        m->after[k] = seen_back[p];
        seen_back[p] |= m->text[k];
    }
    return 0;
}

/* text (not blanks) in the text nodes right after el, before its next element sibling (lxml's tail) */
static int tail_text(S *s, Marks *m, int el) {
    for (int c = s->nodes[el].next; c >= 0 && s->nodes[c].tag < 0; c = s->nodes[c].next)
        if (m->text[c]) return 1;
    return 0;
}

/* text in the text nodes before el's first element child (lxml's el.text) */
static int lead_text(S *s, Marks *m, int el) {
    for (int c = s->nodes[el].first; c >= 0 && s->nodes[c].tag < 0; c = s->nodes[c].next)
        if (m->text[c]) return 1;
    return 0;
}

static int teaser_of(S *s, Marks *m, int a) {
    int el = a, up = s->nodes[a].parent;
    if (up >= 0 && is_heading(s->nodes[up].tag)) el = up;
    else if (up >= 0 && s->nodes[up].parent >= 0 && is_heading(s->nodes[s->nodes[up].parent].tag))
        el = s->nodes[up].parent;
    for (int r = 0; r < 3; r++) {
        int parent = s->nodes[el].parent;
        if (parent < 0 || lead_text(s, m, parent)) return -1;
        if (m->before[el]) return -1;
        if (tail_text(s, m, el) || m->after[el]) return parent;
        el = parent;
    }
    return -1;
}

static PyObject *teasers(S *s, int *links, int nlinks, UBuf *scratch) {
    PyObject *out = PyList_New(0);
    if (!out || !nlinks) return out;
    Marks m = {0};
    int *rank = NULL, *count = NULL, *gtag = NULL, *items = NULL;
    if (marks(s, &m) < 0) goto fail;
    rank = PyMem_Malloc((size_t)s->nn * sizeof(int) * 3);
    items = PyMem_Malloc((size_t)nlinks * sizeof(int));
    if (!rank || !items) { PyErr_NoMemory(); goto fail; }
    count = rank + s->nn;
    gtag = count + s->nn;
    for (int k = 0; k < s->nn; k++) { rank[k] = -1; count[k] = 0; gtag[k] = -2; }
    int ni = 0;
    for (int r = 0; r < nlinks; r++) {
        int item = teaser_of(s, &m, links[r]);
        if (item < 0 || rank[item] >= 0) continue;
        int parent = s->nodes[item].parent;
        if (parent < 0) continue;
        rank[item] = r;
        items[ni++] = item;
        count[parent]++;
        int t = s->nodes[item].tag;
        gtag[parent] = gtag[parent] == -2 ? t : (gtag[parent] == t ? t : -1);
    }
    for (int k = 0; k < ni; k++) {
        int item = items[k], parent = s->nodes[item].parent;
        if (count[parent] < 3 || gtag[parent] == -1) continue; /* MIN_TEASERS, one tag */
        PyObject *text = folded_text(s, item, scratch);
        if (!text) goto fail;
        scratch->n = 0;
        Fold f = {scratch, 0, 0};
        PyObject *bt = block_text(s, item, &f) < 0 ? NULL : ustr(scratch->p, scratch->n);
        PyObject *pair = bt ? PyTuple_Pack(2, text, bt) : NULL;
        Py_DECREF(text);
        Py_XDECREF(bt);
        if (!pair || PyList_Append(out, pair) < 0) { Py_XDECREF(pair); goto fail; }
        Py_DECREF(pair);
    }
    PyMem_Free(m.text);
    PyMem_Free(rank);
    PyMem_Free(items);
    return out;
fail:
    PyMem_Free(m.text);
    PyMem_Free(rank);
    PyMem_Free(items);
    Py_DECREF(out);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* at least 3 words (dedup.extract._TITLE_WORDS), a folded label's blanks + 1, two Han or kana characters
 * one more (is_cjk): in half words, 2 * blanks + cjk >= 4 */
static int title_words(PyObject *str) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(str), n = 0;
    int kind = PyUnicode_KIND(str);
    const void *data = PyUnicode_DATA(str);
    for (Py_ssize_t k = 0; k < len; k++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, k);
        n += c == ' ' ? 2 : is_cjk(c);
        if (n >= 4) return 1;
    }
    return 0;
}

static int append_new(PyObject *list, PyObject *item) {
    if (!item) return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* dedup.page._href_host(href.strip(), own) == own for the href value v[0:len] (own: the page's host, as
 * _host gives it): 1 or 0, or -1 when Python must decide (a non-ASCII character where the host is read, or
 * an absolute URL _HOST's pattern does not match: urlsplit decides) */
static int same_host(const Py_UCS4 *v, Py_ssize_t len, const Py_UCS4 *own, Py_ssize_t olen) {
    Py_ssize_t a = 0, b = len;
    while (a < b && is_space(v[a])) a++; /* str.strip() */
    while (b > a && is_space(v[b - 1])) b--;
    int slashes = 0;
    for (Py_ssize_t k = a; k + 1 < b && k + 1 < a + 8; k++)
        if (v[k] == '/' && v[k + 1] == '/') { slashes = 1; break; }
    if (!slashes) return 1; /* relative: the page's own host */
    for (Py_ssize_t k = a; k < b; k++)
        if (v[k] > 0x7F) return -1;
    /* (?:[a-z][a-z0-9+.\-]*:)?//(?:[^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*), any case */
    Py_ssize_t p = a;
    if (b - p >= 2 && v[p] == '/' && v[p + 1] == '/') {
        p += 2;
    } else {
        if (p >= b || !is_alpha(v[p])) return -1;
        Py_ssize_t j = p + 1;
        while (j < b && (is_alnum(v[j]) || v[j] == '+' || v[j] == '.' || v[j] == '-')) j++;
        if (j + 2 >= b || v[j] != ':' || v[j + 1] != '/' || v[j + 2] != '/') return -1;
        p = j + 3;
    }
    Py_ssize_t j = p;
    while (j < b && v[j] != '/' && v[j] != '?' && v[j] != '#' && v[j] != '@') j++;
    if (j < b && v[j] == '@') p = j + 1;
    Py_ssize_t h0 = p, h1 = p;
    if (p < b && v[p] == '[') {
        Py_ssize_t k = p + 1;
        while (k < b && v[k] != ']') k++;
        if (k < b) h1 = k + 1;
    }
    if (h1 == h0) {
        while (h1 < b && v[h1] != '/' && v[h1] != '?' && v[h1] != '#' && v[h1] != ':') h1++;
    }
    while (h0 < h1 && (v[h0] == '[' || v[h0] == ']')) h0++; /* .strip("[]") */
    while (h1 > h0 && (v[h1 - 1] == '[' || v[h1 - 1] == ']')) h1--;
    if (h1 - h0 >= 4 && lower(v[h0]) == 'w' && lower(v[h0 + 1]) == 'w' && lower(v[h0 + 2]) == 'w' && v[h0 + 3] == '.')
        h0 += 4;
    if (h1 - h0 != olen) return 0;
    for (Py_ssize_t k = 0; k < olen; k++)
        if (lower(v[h0 + k]) != own[k]) return 0;
    return 1;
}

/* (start, end, html): the one article's source span and its source with the comments in it left out */
static PyObject *article_html(S *s) {
    Py_ssize_t a = s->art_start, b = s->art_end;
    if (a < 0 || b < a || b > s->n) { PyErr_SetString(PyExc_SystemError, "article span out of the input"); return NULL; }
    UBuf out = {0};
    Py_ssize_t at = a;
    for (int k = 0; k < s->ncuts; k++) {
        Py_ssize_t c0 = s->cuts[2 * k], c1 = s->cuts[2 * k + 1];
        if (c0 < at || c1 > b) continue;
        if (ub_grow(&out, c0 - at) < 0) goto fail;
        memcpy(out.p + out.n, s->s + at, (size_t)(c0 - at) * sizeof(Py_UCS4));
        out.n += c0 - at;
        at = c1;
    }
    if (ub_grow(&out, b - at) < 0) goto fail;
    memcpy(out.p + out.n, s->s + at, (size_t)(b - at) * sizeof(Py_UCS4));
    out.n += b - at;
    PyObject *html = ustr(out.p, out.n);
    PyMem_Free(out.p);
    return html ? Py_BuildValue("(nnN)", a, b, html) : NULL;
fail:
    PyMem_Free(out.p);
    return NULL;
}

static PyObject *fields_and_text(S *s, int want_main, int want_lines, const Py_UCS4 *own, Py_ssize_t olen) {
    PyObject *title = NULL, *keywords = NULL, *description = NULL, *headings = NULL, *bold = NULL,
             *anchors = NULL, *lines = NULL, *teas = NULL, *result = NULL;
    UBuf scratch = {0}, heads = {0}, lines_buf = {0}, prose_buf = {0};
    Py_ssize_t *hspan = NULL;
    PyObject *prose = NULL;
    int *links = NULL, nlinks = 0, lcap = 0, anchor_count = 0, have_title = 0, nheads = 0, hcap = 0;
    headings = PyList_New(0);
    bold = PyList_New(0);
    anchors = PyList_New(0);
    keywords = PyUnicode_New(0, 0);
    description = PyUnicode_New(0, 0);
    if (!headings || !bold || !anchors || !keywords || !description) goto done;
    for (int k = 0; k < s->nn; k++) {
        int tag = s->nodes[k].tag;
        if (tag < 0) continue;
        if (tag == T_A) {
            const Attr *href = get_attr(s, k, A_HREF);
            if (!href) continue;
            anchor_count++;
            PyObject *label = folded_text(s, k, &scratch);
            if (!label) goto done;
            if (PyUnicode_GET_LENGTH(label)) {
                if (title_words(label)) {
                    if (grow_array((void **)&links, &lcap, nlinks, sizeof(int)) < 0) { Py_DECREF(label); goto done; }
                    links[nlinks++] = k;
                }
                int same = own ? same_host(s->text.p + href->vs, href->vl, own, olen) : -1;
                PyObject *h = attr_str(s, href);
                PyObject *flag = same < 0 ? Py_None : same ? Py_True : Py_False;
                PyObject *row = h ? PyTuple_Pack(3, h, label, flag) : NULL;
                Py_XDECREF(h);
                Py_DECREF(label);
                if (append_new(anchors, row) < 0) goto done;
            } else {
                Py_DECREF(label);
            }
        } else if (tag == T_B || tag == T_STRONG) {
            PyObject *t = folded_text(s, k, &scratch);
            if (!t) goto done;
            if (PyUnicode_GET_LENGTH(t)) {
                if (append_new(bold, t) < 0) goto done;
            } else {
                Py_DECREF(t);
            }
        } else if (tag == T_META) {
            const Attr *name = get_attr(s, k, A_NAME);
            if (!name) continue;
            PyObject **slot = NULL;
            if (attr_is_lower(s, name, "keywords")) slot = &keywords;
            else if (attr_is_lower(s, name, "description")) slot = &description;
            if (!slot || PyUnicode_GET_LENGTH(*slot)) continue;
            const Attr *content = get_attr(s, k, A_CONTENT);
            if (!content) continue;
            scratch.n = 0;
            Fold f = {&scratch, 0, 0};
            if (fold_put(&f, s->text.p + content->vs, content->vl) < 0) goto done;
            PyObject *v = ustr(scratch.p, scratch.n);
            if (!v) goto done;
            Py_SETREF(*slot, v);
        } else if (tag == T_TITLE) {
            if (have_title) continue;
            have_title = 1;
            title = folded_text(s, k, &scratch);
            if (!title) goto done;
        } else if (is_heading(tag)) {
            PyObject *t = folded_text(s, k, &scratch);
            if (!t) goto done;
            if (PyUnicode_GET_LENGTH(t)) {
                /* its text kept for the prose filter too (scratch still holds it) */
                if (grow_array((void **)&hspan, &hcap, nheads, 2 * sizeof(Py_ssize_t)) < 0 ||
                    ub_grow(&heads, scratch.n) < 0) { Py_DECREF(t); goto done; }
                hspan[2 * nheads] = heads.n;
                hspan[2 * nheads + 1] = scratch.n;
                memcpy(heads.p + heads.n, scratch.p, (size_t)scratch.n * sizeof(Py_UCS4));
                heads.n += scratch.n;
                nheads++;
                PyObject *pair = Py_BuildValue("(iN)", tag - T_H1 + 1, t);
                if (append_new(headings, pair) < 0) goto done;
            } else {
                Py_DECREF(t);
            }
        }
    }
    if (!title && !(title = PyUnicode_New(0, 0))) goto done;
    if (want_main && want_lines) {
        if (main_lines(s, &scratch, &lines_buf) < 0 || !(lines = ustr(lines_buf.p, lines_buf.n))) goto done;
        if (prose_lines(lines_buf.p, lines_buf.n, &heads, hspan, nheads, &prose_buf) < 0 ||
            !(prose = ustr(prose_buf.p, prose_buf.n)))
            goto done;
    } else {
        lines = Py_NewRef(Py_None);
        prose = Py_NewRef(Py_None);
    }
    if (want_main) {
        teas = teasers(s, links, nlinks, &scratch);
        if (!teas) goto done;
    } else {
        teas = PyList_New(0);
        if (!teas) goto done;
    }
    /* the one article's source is resiliparse's input: made only when the caller reads the text elsewhere (no
     * lines asked); the native extractor's lines have their own root */
    PyObject *article = s->articles == 1 && !want_lines ? article_html(s) : Py_NewRef(Py_None);
    if (!article) goto done;
    result = Py_BuildValue("(OOOOOOiOOiONO)", title, keywords, description, headings, bold, anchors, anchor_count,
                           lines, teas, s->nn, prose, article, s->marked ? Py_True : Py_False);
done:
    Py_XDECREF(title);
    Py_XDECREF(keywords);
    Py_XDECREF(description);
    Py_XDECREF(headings);
    Py_XDECREF(bold);
    Py_XDECREF(anchors);
    Py_XDECREF(lines);
    Py_XDECREF(teas);
    Py_XDECREF(prose);
    PyMem_Free(scratch.p);
    PyMem_Free(heads.p);
    PyMem_Free(lines_buf.p);
    PyMem_Free(prose_buf.p);
    PyMem_Free(hspan);
    PyMem_Free(links);
    return result;
}

/* html's characters as UCS4 (NUL-terminated, PyMem_Free'd by the caller; None's error set on failure), in
 * one pass that also counts its '<' (*lt) and says whether it holds a lone surrogate (*surrogate) */
/* gcc at -O2 leaves these loops scalar; vectorised they cost what the copy alone did (clang vectorises at -O2) */
#if defined(__GNUC__) && !defined(__clang__)
#define VECTORISED __attribute__((optimize("O3")))
#else
#define VECTORISED
#endif
VECTORISED static Py_UCS4 *ucs4_copy(PyObject *html, Py_ssize_t n, Py_ssize_t *lt, int *surrogate) {
    Py_UCS4 *buf = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_UCS4));
    if (!buf) { PyErr_NoMemory(); return NULL; }
    const void *data = PyUnicode_DATA(html);
    Py_ssize_t count = 0;
    unsigned int sur = 0;
    switch (PyUnicode_KIND(html)) {
    case PyUnicode_1BYTE_KIND: {
        const Py_UCS1 *p = data;
        for (Py_ssize_t k = 0; k < n; k++) { buf[k] = p[k]; count += p[k] == '<'; }
        break;
    }
    case PyUnicode_2BYTE_KIND: {
        const Py_UCS2 *p = data;
        for (Py_ssize_t k = 0; k < n; k++) { buf[k] = p[k]; count += p[k] == '<'; sur |= (p[k] & 0xF800u) == 0xD800u; }
        break;
    }
    default: {
        const Py_UCS4 *p = data;
        for (Py_ssize_t k = 0; k < n; k++) { buf[k] = p[k]; count += p[k] == '<'; sur |= (p[k] & 0xFFFFF800u) == 0xD800u; }
    }
    }
    buf[n] = 0;
    *lt = count;
    *surrogate = sur != 0;
    return buf;
}

static PyObject *scan(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"html", "main", "own", "lines", "max_tags", NULL};
    PyObject *html, *own_host = NULL;
    int want_main = 1, want_lines = 1;
    Py_ssize_t max_tags = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|pUpn:scan", kw, &html, &want_main, &own_host, &want_lines,
                                     &max_tags))
        return NULL;
    Py_UCS4 *own = NULL;
    Py_ssize_t olen = 0;
    if (own_host) {
        olen = PyUnicode_GET_LENGTH(own_host);
        for (Py_ssize_t k = 0; k < olen; k++)
            if (PyUnicode_READ_CHAR(own_host, k) > 0x7F) { own_host = NULL; break; } /* Python compares */
    }
    if (own_host && !(own = PyUnicode_AsUCS4Copy(own_host))) return NULL;
#if PY_VERSION_HEX < 0x030C0000 /* a str made by the legacy API is made ready before its data is read below */
    if (PyUnicode_READY(html) < 0) { PyMem_Free(own); return NULL; }
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(html), lt = 0;
    int surrogate = 0;
    Py_UCS4 *buf = ucs4_copy(html, n, &lt, &surrogate);
    if (!buf) { PyMem_Free(own); return NULL; }
    if (surrogate) { /* a lone surrogate: lxml refuses the str */
        PyMem_Free(buf);
        PyMem_Free(own);
        Py_RETURN_NONE;
    }
    if (max_tags >= 0 && lt > max_tags) want_main = 0; /* more '<' than max_tags: as main=False */
    S s;
    memset(&s, 0, sizeof(s));
    s.s = buf;
    s.n = n;
    s.art_node = -1;
    s.art_end = -1;
    PyObject *result = NULL;
    if (init_names(&s) == 0 && ub_grow(&s.text, n / 2 + 16) == 0 && build(&s) == 0)
        result = fields_and_text(&s, want_main, want_lines, own, olen);
    s_free(&s);
    PyMem_Free(buf);
    PyMem_Free(own);
    return result;
}

/* is_prose(line): the test above on a Python str (dedup.extract._is_prose) */
static PyObject *py_is_prose(PyObject *self, PyObject *line) {
    if (!PyUnicode_Check(line)) {
        PyErr_Format(PyExc_TypeError, "is_prose() takes a str, not %.100s", Py_TYPE(line)->tp_name);
        return NULL;
    }
    Py_UCS4 *p = PyUnicode_AsUCS4Copy(line);
    if (!p) return NULL;
    int prose = is_prose(p, PyUnicode_GET_LENGTH(line));
    PyMem_Free(p);
    return PyBool_FromLong(prose);
}

/* title_words(label): the test above on a Python str (dedup.extract.title_links) */
static PyObject *py_title_words(PyObject *self, PyObject *label) {
    if (!PyUnicode_Check(label)) {
        PyErr_Format(PyExc_TypeError, "title_words() takes a str, not %.100s", Py_TYPE(label)->tp_name);
        return NULL;
    }
    return PyBool_FromLong(title_words(label));
}

/* has_cjk(text): whether text holds a Han or kana character (is_cjk); a text of 1-byte characters cannot */
static PyObject *py_has_cjk(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "has_cjk() takes a str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    if (kind == PyUnicode_1BYTE_KIND) Py_RETURN_FALSE;
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t k = 0; k < len; k++)
        if (is_cjk(PyUnicode_READ(kind, data, k))) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_VARARGS | METH_KEYWORDS,
     "scan(html, main=True, own=None, lines=True, max_tags=-1): the tagged fields, the main-content lines, the "
     "teasers and (lines false) the one <article>'s source span of a page, in one pass (max_tags >= 0: main only "
     "when html holds at most that many '<')."},
    {"is_prose", (PyCFunction)py_is_prose, METH_O,
     "is_prose(line): at least 20 words (runs between single blanks; two Han or kana characters one more), at least "
     "half of them holding a letter."},
    {"title_words", (PyCFunction)py_title_words, METH_O,
     "title_words(label): at least 3 words (blanks + 1; two Han or kana characters one more), a teaser title's "
     "length."},
    {"has_cjk", (PyCFunction)py_has_cjk, METH_O,
     "has_cjk(text): whether text holds a Han or kana character (the characters the prose rule counts two to a "
     "word)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "dedup._scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__scan(void) {
    init_tables();
    return PyModule_Create(&module);
}
