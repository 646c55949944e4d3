// Sampling, the passes over the vocabulary before the draw (sample.wgsl). Every pass is spread over 2048-token
// blocks, one workgroup per block, so no workgroup walks the whole vocabulary however flat the logits are:
//   max:   the penalties (each block's workgroup penalises the ring's tokens that fall in its block, each
//          distinct token once: the repetition penalty, then minus frequency * count + presence, as llama.cpp's
//          penalties sampler), then each block's largest order key of the temperature-scaled logits and its
//          lowest index; when sampling it also zeroes the threshold histograms.
//   level: one level of an exact radix select over the 32-bit order keys (digits of 11, 11 and 10 bits).
//          Stages 0-2 find the top-k threshold (the k-th largest key; histograms of counts), stages 3-5 the
//          top-p threshold (the largest key t whose mass at or above t reaches top_p of the mass that top-k
//          and the cut leave; histograms of masses). Each workgroup builds its block's histogram in workgroup
//          memory and adds it into one global histogram with integer atomics (masses as 2^-31 fixed point in
//          two words with a carry), so the sums are exact and do not depend on the order the blocks land in;
//          the next pass's workgroups each read that histogram and pick the digit themselves, which saves a
//          dispatch per level.
//   mass:  the final threshold (the largest of the 30-nat cut, top-k, top-p and min-p) and, per block, the
//          inclusive prefix sums of the kept mass over the block's 8-token chunks, from which the draw finds a
//          block, a chunk and a token.
// work: u32 words, see the W_* constants (op_sample_work_bytes() in src/ops/op_sample.c matches them).
//! variant max: MAX=1 LEVEL=0 MASS=0
//! variant level: MAX=0 LEVEL=1 MASS=0
//! variant mass: MAX=0 LEVEL=0 MASS=1
struct Params { V: u32, n_blocks: u32, ring_cap: u32, top_k: u32,
                temp: f32, rep_penalty: f32, cut: f32, top_p: f32,
                log_min_p: f32, stage: u32, flags: u32, presence: f32,
                frequency: f32, _p0: u32, _p1: u32, _p2: u32 };
@group(0) @binding(0) var<uniform> p: Params;
#if MAX
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> work: array<u32>;
@group(0) @binding(3) var<storage, read> state: array<u32>;
#else
@group(0) @binding(1) var<storage, read> logits: array<f32>;
#endif
#if LEVEL
@group(0) @binding(2) var<storage, read_write> work: array<atomic<u32>>;
#endif
#if MASS
@group(0) @binding(2) var<storage, read_write> work: array<u32>;
#endif

const WG = 256u;
const BLOCK = 2048u;
// flags
const F_PENALTY = 1u;  // apply the penalties (repetition, presence, frequency)
const F_SAMPLE = 2u;   // temperature > 0: zero the histograms
const F_TOPK = 4u;     // 0 < top_k < V: stages 0-2 ran
const F_TOPP = 8u;     // 0 < top_p < 1: stages 3-5 ran
const F_MINP = 16u;    // min_p > 0
// work layout (u32 words)
const W_KST = 8u;      // + 4j: top-k state after the select of level j: prefix, count above, found
const W_PBASE = 20u;   // the lowest key top-p looks at: max(cut, top-k threshold)
const W_PGOAL = 21u;   // f32: top_p times the mass at or above W_PBASE (fixed point units)
const W_PST = 24u;     // + 4j: top-p state after the select of level j: prefix, mass above (lo, hi), found
const W_THR = 40u;     // the final threshold key: tokens with key >= it are drawn from
const W_MKEY = 41u;    // the largest key
const W_BLK = 64u;     // + 2b, + 2b + 1: block b's largest key and its lowest index (b < 256)
const W_HK = 576u;     // count histograms of levels 0, 1, 2 at + 2048j (2048, 2048, 1024 bins)
const W_HP = 5696u;    // mass histograms (lo, hi pairs) of levels 0, 1, 2 at + 4096j
const W_ZERO = 15360u; // words from W_HK to the end of the mass histograms
const W_PRE = 15936u;  // + 256b + c: inclusive prefix of block b's kept mass over chunks 0..c (f32)
const FIX = 2147483648.0; // mass fixed point: exp(s - max) * 2^31 (<= 2^31 per token)

var<workgroup> su: array<u32, 256>;
var<workgroup> sv: array<u32, 256>;
var<workgroup> rf: array<f32, 256>;
var<workgroup> pk: array<u32, 4>;
#if LEVEL
var<workgroup> sh: array<atomic<u32>, 4096>; // the block's histogram: counts, or mass (lo, hi) pairs
#endif

fn key_of(f: f32) -> u32 {
  let u = bitcast<u32>(f);
  return select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u);
}
fn val_of(k: u32) -> f32 { return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u)); }
fn scaled(i: u32) -> f32 {
  if (p.temp > 0.0) { return logits[i] / p.temp; }
  return logits[i];
}

#ifnot MAX
#if LEVEL
fn wload(i: u32) -> u32 { return atomicLoad(&work[i]); }
fn wstore(i: u32, v: u32) { atomicStore(&work[i], v); }
#else
fn wload(i: u32) -> u32 { return work[i]; }
fn wstore(i: u32, v: u32) { work[i] = v; }
#endif

// 64-bit unsigned sums as (lo, hi)
fn add64(a: vec2u, b: vec2u) -> vec2u {
  let lo = a.x + b.x;
  return vec2u(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn sub64(a: vec2u, b: vec2u) -> vec2u { return vec2u(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x)); }
// monotone (never reorders two sums), so the crossing found below is unique
fn f_of(a: vec2u) -> f32 { return f32(a.y) * 4294967296.0 + f32(a.x); }

// the largest key over the block maxima (all threads get it)
fn global_max(l: u32) -> u32 {
  su[l] = select(0u, wload(W_BLK + 2u * l), l < p.n_blocks);
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l < s) { su[l] = max(su[l], su[l + s]); }
    workgroupBarrier();
  }
  let r = su[0];
  workgroupBarrier();
  return r;
}

fn nbins(j: u32) -> u32 { return select(2048u, 1024u, j == 2u); }
fn digit_bits(j: u32) -> u32 { return select(11u, 10u, j == 2u); }

struct Sel { prefix: u32, above: vec2u, found: u32, goal: f32 };

// One radix level: the largest digit d of histogram j with above + (sum of bins >= d) >= goal, and the new
// 'above' (the sum of the bins over d). Thread l holds bins [l * per, (l + 1) * per); a suffix scan over the
// threads finds the one thread whose bins hold the crossing, which then walks them. Counts use only the low
// words (hi = 0); masses compare as f32. With first, goal is top_p times the histogram's total.
fn radix_select(l: u32, hist: u32, pairs: bool, j: u32, prev: Sel, first: bool) -> Sel {
  let per = nbins(j) / WG;
  // the thread's bins stay in registers (fixed trip counts, no break) so the walk below is not a chain of loads
  var hb: array<vec2u, 8>;
  var s = vec2u(0u);
  for (var t = 0u; t < 8u; t++) {
    var h = vec2u(0u);
    if (t < per) {
      let d = l * per + t;
      if (pairs) { h = vec2u(wload(hist + 2u * d), wload(hist + 2u * d + 1u)); }
      else { h.x = wload(hist + d); }
    }
    hb[t] = h;
    s = add64(s, h);
  }
  su[l] = s.x;
  sv[l] = s.y;
  if (l == 0u) { pk[3] = 0u; }
  workgroupBarrier();
  for (var off = 1u; off < WG; off <<= 1u) {
    var v = vec2u(su[l], sv[l]);
    if (l + off < WG) { v = add64(v, vec2u(su[l + off], sv[l + off])); }
    workgroupBarrier();
    su[l] = v.x;
    sv[l] = v.y;
    workgroupBarrier();
  }
  var goal = prev.goal;
  if (first) { goal = p.top_p * f_of(add64(prev.above, vec2u(su[0], sv[0]))); }
  let incl = add64(prev.above, vec2u(su[l], sv[l])); // above + bins from this thread's first one up
  let excl = sub64(incl, s);
  if (f_of(excl) < goal && f_of(incl) >= goal) {
    var acc = excl;
    var done = false;
    for (var t = 0u; t < 8u; t++) {
      let q = 7u - t; // from the thread's top bin down
      if (q < per && !done) {
        let nx = add64(acc, hb[q]);
        if (f_of(nx) >= goal || q == 0u) {
          pk[0] = l * per + q;
          pk[1] = acc.x;
          pk[2] = acc.y;
          pk[3] = 1u;
          done = true;
        } else {
          acc = nx;
        }
      }
    }
  }
  workgroupBarrier();
  var r: Sel;
  r.found = pk[3] & prev.found;
  r.prefix = (prev.prefix << digit_bits(j)) | pk[0];
  r.above = vec2u(pk[1], pk[2]);
  r.goal = goal;
  workgroupBarrier(); // pk and the scan arrays are reused
  return r;
}

// top-k's state after the select of level j (the caller's workgroup 0 stores it): the k-th largest key is the
// largest t with count(key >= t) >= k
fn k_select(l: u32, j: u32) -> Sel {
  var prev: Sel;
  prev.prefix = 0u;
  prev.above = vec2u(0u);
  prev.found = 1u;
  prev.goal = f32(p.top_k);
  if (j > 0u) {
    let o = W_KST + 4u * (j - 1u);
    prev.prefix = wload(o);
    prev.above = vec2u(wload(o + 1u), 0u);
    prev.found = wload(o + 2u);
  }
  return radix_select(l, W_HK + 2048u * j, false, j, prev, false);
}
fn k_store(s: Sel, j: u32) {
  let o = W_KST + 4u * j;
  wstore(o, s.prefix);
  wstore(o + 1u, s.above.x);
  wstore(o + 2u, s.found);
}
// top-p's state after the select of level j: the top-p threshold is the largest t >= W_PBASE with
// mass(key >= t) >= W_PGOAL
fn p_select(l: u32, j: u32) -> Sel {
  var prev: Sel;
  prev.prefix = 0u;
  prev.above = vec2u(0u);
  prev.found = 1u;
  prev.goal = 0.0;
  if (j > 0u) {
    let o = W_PST + 4u * (j - 1u);
    prev.prefix = wload(o);
    prev.above = vec2u(wload(o + 1u), wload(o + 2u));
    prev.found = wload(o + 3u);
    prev.goal = bitcast<f32>(wload(W_PGOAL));
  }
  return radix_select(l, W_HP + 4096u * j, true, j, prev, j == 0u);
}
fn p_store(s: Sel, j: u32) {
  let o = W_PST + 4u * j;
  wstore(o, s.prefix);
  wstore(o + 1u, s.above.x);
  wstore(o + 2u, s.above.y);
  wstore(o + 3u, s.found);
  if (j == 0u) { wstore(W_PGOAL, bitcast<u32>(s.goal)); }
}
#endif

#if LEVEL
// adds a thread's run of tokens in one bin to the workgroup histogram
fn flush_run(d: u32, pairs: bool, run: vec2u) {
  if (d == 0xffffffffu) { return; }
  if (pairs) {
    let old = atomicAdd(&sh[2u * d], run.x);
    atomicAdd(&sh[2u * d + 1u], run.y + select(0u, 1u, old + run.x < old));
  } else {
    atomicAdd(&sh[d], run.x);
  }
}
#endif

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let l = lid.x;
  let b = wid.x;
#if MAX
  // the penalties, once per distinct token of the ring (by the thread holding its first occurrence, which also
  // counts its occurrences), by the block holding the token: repetition (x / r above 0, x * r otherwise; r = 1
  // leaves x exact), then x - (frequency * count + presence)
  if ((p.flags & F_PENALTY) != 0u) {
    // the ring in workgroup memory, so the duplicate scan is not a chain of storage loads
    let n_ring = min(state[1], p.ring_cap);
    su[l] = select(0xffffffffu, state[4u + min(l, p.ring_cap - 1u)], l < n_ring);
    workgroupBarrier();
    let t = su[l];
    if (t < p.V && t / BLOCK == b) {
      var dup = false;
      for (var j = 0u; j < l; j++) { if (su[j] == t) { dup = true; break; } }
      if (!dup) {
        var count = 1u;
        for (var j = l + 1u; j < n_ring; j++) { count += select(0u, 1u, su[j] == t); }
        let x = logits[t];
        let r = select(x * p.rep_penalty, x / p.rep_penalty, x > 0.0);
        logits[t] = r - (f32(count) * p.frequency + p.presence);
      }
    }
    workgroupBarrier(); // su is reused below
  }
  storageBarrier(); // the penalised logits are read below by other threads of this workgroup
  var best = 0u;
  var besti = 0xffffffffu;
  for (var i = b * BLOCK + l; i < min((b + 1u) * BLOCK, p.V); i += WG) {
    let k = key_of(scaled(i));
    if (k > best || besti == 0xffffffffu) { best = k; besti = i; }
  }
  su[l] = best;
  sv[l] = besti;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (l < s) {
      let ok = su[l + s];
      let oi = sv[l + s];
      if (oi != 0xffffffffu && (sv[l] == 0xffffffffu || ok > su[l] || (ok == su[l] && oi < sv[l]))) {
        su[l] = ok;
        sv[l] = oi;
      }
    }
    workgroupBarrier();
  }
  if (l == 0u) {
    work[W_BLK + 2u * b] = su[0];
    work[W_BLK + 2u * b + 1u] = sv[0];
  }
  if ((p.flags & F_SAMPLE) != 0u) {
    for (var i = b * WG + l; i < W_ZERO; i += p.n_blocks * WG) { work[W_HK + i] = 0u; }
  }
#endif
#if LEVEL
  // this block's logits are loaded first, so their latency overlaps the select below
  var xs: array<f32, 8>;
  for (var t = 0u; t < BLOCK / WG; t++) { xs[t] = logits[min(b * BLOCK + t * WG + l, p.V - 1u)]; }
  // finish the previous level's select, then build this level's histogram over the tokens under its prefix
  let pairs = p.stage >= 3u;
  let j = select(p.stage, p.stage - 3u, pairs);
  var prefix = 0u;
  var base = 0u;
  var m = 0.0;
  if (!pairs) {
    if (j > 0u) {
      let s = k_select(l, j - 1u);
      if (b == 0u && l == 0u) { k_store(s, j - 1u); }
      prefix = s.prefix;
    }
  } else {
    let kmax = global_max(l);
    m = val_of(kmax);
    if (j == 0u) {
      base = key_of(m - p.cut);
      if ((p.flags & F_TOPK) != 0u) {
        let s = k_select(l, 2u);
        if (b == 0u && l == 0u) { k_store(s, 2u); }
        if (s.found != 0u) { base = max(base, s.prefix); }
      }
      if (b == 0u && l == 0u) { wstore(W_PBASE, base); }
    } else {
      base = wload(W_PBASE);
      let s = p_select(l, j - 1u);
      if (b == 0u && l == 0u) { p_store(s, j - 1u); }
      prefix = s.prefix;
    }
  }
  let nb = nbins(j);
  for (var d = l; d < 2u * nb; d += WG) { atomicStore(&sh[d], 0u); }
  workgroupBarrier();
  // tokens that share a bin (the common case for flat logits) are added as one run
  let hi_shift = select(21u, 10u, j == 2u); // the bits above this level's digit
  let lo_shift = select(10u, 0u, j == 2u);
  var cur = 0xffffffffu;
  var run = vec2u(0u);
  for (var t = 0u; t < BLOCK / WG; t++) {
    let i = b * BLOCK + t * WG + l;
    if (i < p.V) {
      let s = xs[t] / p.temp;
      let k = key_of(s);
      let in_prefix = j == 0u || (k >> hi_shift) == prefix;
      if (in_prefix && k >= base) {
        let d = select((k >> lo_shift) & 0x7ffu, k >> 21u, j == 0u) & (nb - 1u);
        if (d != cur) {
          flush_run(cur, pairs, run);
          cur = d;
          run = vec2u(0u);
        }
        if (pairs) { run = add64(run, vec2u(u32(exp(s - m) * FIX + 0.5), 0u)); }
        else { run.x += 1u; }
      }
    }
  }
  flush_run(cur, pairs, run);
  workgroupBarrier();
  if (pairs) {
    let h = W_HP + 4096u * j;
    for (var d = l; d < nb; d += WG) {
      let lo = atomicLoad(&sh[2u * d]);
      let hi = atomicLoad(&sh[2u * d + 1u]);
      if ((lo | hi) != 0u) {
        let old = atomicAdd(&work[h + 2u * d], lo);
        atomicAdd(&work[h + 2u * d + 1u], hi + select(0u, 1u, old + lo < old));
      }
    }
  } else {
    let h = W_HK + 2048u * j;
    for (var d = l; d < nb; d += WG) {
      let c = atomicLoad(&sh[d]);
      if (c != 0u) { atomicAdd(&work[h + d], c); }
    }
  }
#endif
#if MASS
  let i0 = b * BLOCK + l * (BLOCK / WG);
  var xs: array<f32, 8>; // loaded first, so their latency overlaps the select
  for (var t = 0u; t < BLOCK / WG; t++) { xs[t] = logits[min(i0 + t, p.V - 1u)]; }
  let kmax = global_max(l);
  let m = val_of(kmax);
  var thr = key_of(m - p.cut);
  if ((p.flags & F_TOPP) != 0u) {
    let s = p_select(l, 2u);
    if (b == 0u && l == 0u) { p_store(s, 2u); }
    thr = max(thr, work[W_PBASE]);
    if (s.found != 0u) { thr = max(thr, s.prefix); }
  } else if ((p.flags & F_TOPK) != 0u) {
    let s = k_select(l, 2u);
    if (b == 0u && l == 0u) { k_store(s, 2u); }
    if (s.found != 0u) { thr = max(thr, s.prefix); }
  }
  // min-p: p(x) >= min_p * p(max)  <=>  s >= m + log(min_p)
  if ((p.flags & F_MINP) != 0u) { thr = max(thr, min(kmax, key_of(m + p.log_min_p))); }
  if (b == 0u && l == 0u) {
    work[W_THR] = thr;
    work[W_MKEY] = kmax;
  }
  var part = 0.0;
  for (var t = 0u; t < BLOCK / WG; t++) {
    let s = xs[t] / p.temp;
    if (i0 + t < p.V && key_of(s) >= thr) { part += exp(s - m); }
  }
  rf[l] = part;
  workgroupBarrier();
  for (var off = 1u; off < WG; off <<= 1u) {
    var v = rf[l];
    if (l >= off) { v += rf[l - off]; }
    workgroupBarrier();
    rf[l] = v;
    workgroupBarrier();
  }
  work[W_PRE + WG * b + l] = bitcast<u32>(rf[l]);
#endif
}
