// webgpu.h for wgllm.wasm, in JavaScript over a WebGPU `GPU` object (navigator.gpu in a page, npm `webgpu`'s on
// Node.js): exactly the entry points the engine calls (web/webgpu.imports), one function each, reading and writing
// the C structs at their wasm32 offsets (Dawn's webgpu.h as bootstrap installs it). Handles are small integers
// naming JavaScript objects. Callbacks run on the engine's thread only: futures' callbacks inside
// wgpuInstanceWaitAny (the one import that suspends the wasm through JSPI, WebAssembly.Suspending, while it awaits
// the GPU's promises), the device's uncaptured errors and loss inside wgpuInstanceProcessEvents and WaitAny.
// No browser globals: the GPU object is passed in, so emdawnwebgpu or Node can stand where this stands.

const STRLEN = 0xffffffff; // WGPU_STRLEN on wasm32 (SIZE_MAX)
const WHOLE = 0xffffffffffffffffn; // WGPU_WHOLE_SIZE, WGPU_LIMIT_U64_UNDEFINED
const U32_UNDEF = 0xffffffff;
// WGPUFeatureName (the header's values) -> WebGPU's names: the features the engine asks for
const FEATURES = { 0x09: 'timestamp-query', 0x0b: 'shader-f16', 0x12: 'subgroups',
  0x50037: 'chromium-experimental-subgroup-matrix' }; // the last as src/gpu/gpu.h's wasm build numbers it
// Dawn's AdapterPropertiesSubgroupMatrixConfigs (chained on wgpuAdapterGetInfo) and its component types
const STYPE_SMAT_CONFIGS = 0x5003b;
const SMAT_TYPES = { f32: 1, f16: 2, u32: 3, i32: 4, u8: 5, i8: 6 };
// WGPULimits' fields in order (after nextInChain); 'u64' fields are 8-aligned
const LIMITS = [
  ['maxTextureDimension1D'], ['maxTextureDimension2D'], ['maxTextureDimension3D'], ['maxTextureArrayLayers'],
  ['maxBindGroups'], ['maxBindGroupsPlusVertexBuffers'], ['maxBindingsPerBindGroup'],
  ['maxDynamicUniformBuffersPerPipelineLayout'], ['maxDynamicStorageBuffersPerPipelineLayout'],
  ['maxSampledTexturesPerShaderStage'], ['maxSamplersPerShaderStage'], ['maxStorageBuffersPerShaderStage'],
  ['maxStorageTexturesPerShaderStage'], ['maxUniformBuffersPerShaderStage'], ['maxUniformBufferBindingSize', 'u64'],
  ['maxStorageBufferBindingSize', 'u64'], ['minUniformBufferOffsetAlignment'], ['minStorageBufferOffsetAlignment'],
  ['maxVertexBuffers'], ['maxBufferSize', 'u64'], ['maxVertexAttributes'], ['maxVertexBufferArrayStride'],
  ['maxInterStageShaderVariables'], ['maxColorAttachments'], ['maxColorAttachmentBytesPerSample'],
  ['maxComputeWorkgroupStorageSize'], ['maxComputeInvocationsPerWorkgroup'], ['maxComputeWorkgroupSizeX'],
  ['maxComputeWorkgroupSizeY'], ['maxComputeWorkgroupSizeZ'], ['maxComputeWorkgroupsPerDimension'],
  ['maxImmediateSize'],
];
{ // offsets as clang lays the struct out for wasm32 (the pointer first; 152 bytes)
  let off = 4;
  for (const f of LIMITS) {
    if (f[1] === 'u64') off = (off + 7) & ~7;
    f[2] = off;
    off += f[1] === 'u64' ? 8 : 4;
  }
}
const ERROR_TYPE = { GPUValidationError: 2, GPUOutOfMemoryError: 3, GPUInternalError: 4 }; // WGPUErrorType
const ERROR_FILTER = { 1: 'validation', 2: 'out-of-memory', 3: 'internal' }; // WGPUErrorFilter

// Returns { imports, attach(exports) }: imports for the wasm's "env" module (wgpuInstanceWaitAny wrapped as
// WebAssembly.Suspending); attach gives it the instance's exports (memory, malloc, free, the function table).
export function createWebGPU(gpu, options = {}) {
  const profile = options.profile ? new Map() : null; // pipeline label -> [dispatches, total ns] (measurements only)
  let ex = null; // the wasm's exports
  const objs = new Map(); // handle -> object
  let nextHandle = 1;
  const futures = new Map(); // future id (Number) -> { settled, result, fire, promise }
  let nextFuture = 1;
  const spontaneous = []; // device errors and losses waiting for ProcessEvents / WaitAny
  const stats = { waits: 0, timeouts: 0, waitMs: 0 }; // wgpuInstanceWaitAny's calls, timed-out calls, time in them

  const add = (o) => { const h = nextHandle++; objs.set(h, o); return h; };
  const get = (h) => objs.get(h);
  const release = (h) => { objs.delete(h); };
  const dv = () => new DataView(ex.memory.buffer);
  const u8 = () => new Uint8Array(ex.memory.buffer);
  const u32 = (p) => dv().getUint32(p, true);
  const u64 = (p) => dv().getBigUint64(p, true);
  const dec = new TextDecoder();
  const enc = new TextEncoder();
  // a WGPUStringView at p
  const str = (p) => {
    const data = u32(p), len = u32(p + 4);
    if (!data) return '';
    if (len === STRLEN) { const m = u8(); let e = data; while (m[e]) e++; return dec.decode(m.subarray(data, e)); }
    return dec.decode(u8().subarray(data, data + len));
  };
  // a malloc'd NUL-terminated copy of s: [pointer, byte length]
  const cstr = (s) => {
    const b = enc.encode(s);
    const p = ex.malloc(b.length + 1);
    u8().set(b, p);
    u8()[p + b.length] = 0;
    return [p, b.length];
  };
  // calls the C callback fn(...args) with a WGPUStringView of msg at the argument `at`, freed after the call
  const callWithMessage = (fn, at, args, msg) => {
    const [s, n] = cstr(msg || '');
    const sv = ex.malloc(8);
    dv().setUint32(sv, s, true);
    dv().setUint32(sv + 4, n, true);
    args.splice(at, 0, sv);
    try { ex.__indirect_function_table.get(fn)(...args); } finally { ex.free(sv); ex.free(s); }
  };
  // a callback-info struct at p: { mode, callback, userdata1, userdata2 } (mode-first layouts)
  const callbackInfo = (p) => ({ mode: u32(p + 4), fn: u32(p + 8), u1: u32(p + 12), u2: u32(p + 16) });
  // a future whose callback fire(result) runs in WaitAny once promise has settled to result
  const future = (promise, fire) => {
    const id = nextFuture++;
    const f = { settled: false, result: undefined, fire, fired: false };
    f.promise = promise.then((r) => { f.settled = true; f.result = r; });
    futures.set(id, f);
    return BigInt(id);
  };
  const fireFuture = (id) => {
    const f = futures.get(id);
    if (!f || f.fired || !f.settled) return;
    f.fired = true;
    futures.delete(id);
    if (f.fire) f.fire(f.result);
  };
  const deliverSpontaneous = () => {
    while (spontaneous.length) spontaneous.shift()();
  };
  const limitsOut = (limits, p) => {
    const d = dv();
    for (const [name, type, off] of LIMITS) {
      const v = limits[name];
      if (type === 'u64') d.setBigUint64(p + off, v === undefined ? 0n : BigInt(v), true);
      else d.setUint32(p + off, v === undefined ? 0 : v, true);
    }
    return 1; // WGPUStatus_Success
  };
  const errorMessage = (e) => (e && e.message) || String(e);
  // profile mode: a pass whose dispatches each run in a pass of their own between timestamps, summed by pipeline
  const profilePass = (encRec) => {
    const e = encRec.encoder;
    let pipe = null, groups = [];
    const entries = [];
    const dev = encRec.device;
    const one = (f) => {
      const qs = dev.createQuerySet({ type: 'timestamp', count: 2 });
      const ps = e.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
      ps.setPipeline(pipe);
      groups.forEach((g, i) => g && ps.setBindGroup(i, g));
      f(ps);
      ps.end();
      const res = dev.createBuffer({ size: 16, usage: 0x200 | 0x4 }); // QUERY_RESOLVE | COPY_SRC
      const rb = dev.createBuffer({ size: 16, usage: 0x1 | 0x8 }); // MAP_READ | COPY_DST
      e.resolveQuerySet(qs, 0, 2, res, 0);
      e.copyBufferToBuffer(res, 0, rb, 0, 16);
      entries.push([pipe.label, rb]);
    };
    encRec.afterSubmit = () => entries.forEach(([label, rb]) => rb.mapAsync(1 /* READ */).then(() => {
      const t = new BigUint64Array(rb.getMappedRange());
      const a = profile.get(label) || [0, 0];
      a[0]++; a[1] += Number(t[1] - t[0]);
      profile.set(label, a);
      rb.unmap(); rb.destroy();
    }));
    return {
      setPipeline(p) { pipe = p; },
      setBindGroup(i, g) { groups[i] = g; },
      dispatchWorkgroups(x, y, z) { one((ps) => ps.dispatchWorkgroups(x, y, z)); },
      dispatchWorkgroupsIndirect(b, o) { one((ps) => ps.dispatchWorkgroupsIndirect(b, o)); },
      end() {},
    };
  };

  const imports = {
    // ---------- instance ----------
    wgpuCreateInstance(desc) { return add({ gpu }); },
    wgpuInstanceRelease: release,
    wgpuInstanceRequestAdapter(instance, options, info) {
      const ci = callbackInfo(info);
      const opts = {};
      if (options) {
        const pp = u32(options + 8);
        if (pp === 1) opts.powerPreference = 'low-power';
        else if (pp === 2) opts.powerPreference = 'high-performance';
        if (u32(options + 12)) opts.forceFallbackAdapter = true;
      }
      const p = gpu.requestAdapter(opts).then((a) => ({ a }), (e) => ({ e }));
      return future(p, (r) => {
        const ok = r.a ? 1 : r.e ? 4 : 3; // Success, Error, Unavailable
        callWithMessage(ci.fn, 2, [ok, r.a ? add({ adapter: r.a }) : 0, ci.u1, ci.u2],
          r.a ? '' : r.e ? errorMessage(r.e) : 'no adapter');
      });
    },
    wgpuInstanceProcessEvents(instance) { deliverSpontaneous(); },
    // waits (suspending the wasm) until one of the futures completes or the timeout (ns) passes
    wgpuInstanceWaitAny: new WebAssembly.Suspending(async (instance, count, infos, timeoutNs) => {
      const ids = [];
      for (let i = 0; i < count; i++) ids.push(Number(u64(infos + 16 * i)));
      const done = () => ids.filter((id) => { const f = futures.get(id); return !f || f.settled; });
      let ready = done();
      stats.waits++;
      const t0 = performance.now();
      if (!ready.length && timeoutNs > 0n) {
        const waits = ids.map((id) => futures.get(id).promise);
        let timer;
        const ms = timeoutNs >= 0xffffffffffffffffn ? null : Number(timeoutNs / 1000000n);
        if (ms !== null) waits.push(new Promise((res) => { timer = setTimeout(res, ms); }));
        await Promise.race(waits);
        if (timer !== undefined) clearTimeout(timer);
        ready = done();
      }
      stats.waitMs += performance.now() - t0;
      deliverSpontaneous();
      if (!ready.length) { stats.timeouts++; return 2; } // WGPUWaitStatus_TimedOut
      for (const id of ready) {
        fireFuture(id);
        dv().setUint32(infos + 16 * ids.indexOf(id) + 8, 1, true); // completed
      }
      return 1; // WGPUWaitStatus_Success
    }),

    // ---------- adapter ----------
    wgpuAdapterRelease: release,
    wgpuAdapterGetInfo(adapter, p) {
      const a = get(adapter).adapter;
      const i = a.info || {};
      const d = dv();
      // browsers often leave `device` empty: the description or architecture names the adapter then
      const name = i.device || i.description || i.architecture || i.vendor || 'WebGPU adapter';
      const fields = [[4, i.vendor || ''], [12, i.architecture || ''], [20, name], [28, i.description || '']];
      for (const [off, s] of fields) {
        const [q, n] = cstr(s);
        dv().setUint32(p + off, q, true);
        dv().setUint32(p + off + 4, n, true);
      }
      d.setUint32(p + 36, 2, true); // WGPUBackendType_WebGPU
      d.setUint32(p + 40, i.isFallbackAdapter || a.isFallbackAdapter ? 3 : 4, true); // CPU or Unknown
      d.setUint32(p + 44, 0, true);
      d.setUint32(p + 48, 0, true);
      d.setUint32(p + 52, i.subgroupMinSize || 0, true);
      d.setUint32(p + 56, i.subgroupMaxSize || 0, true);
      for (let c = u32(p); c; c = u32(c)) { // chained: the subgroup-matrix configurations (count at +8, array at +12)
        if (u32(c + 4) !== STYPE_SMAT_CONFIGS) continue;
        const list = [...(i.subgroupMatrixConfigs || [])];
        const rec = get(adapter);
        if (!rec.smatConfigs) { // written once an adapter, freed never: 20 bytes a configuration
          rec.smatConfigs = list.length ? ex.malloc(20 * list.length) : 0;
          list.forEach((m, k) => {
            const q = rec.smatConfigs + 20 * k;
            [SMAT_TYPES[m.componentType] || 0, SMAT_TYPES[m.resultComponentType] || 0, m.M, m.N, m.K]
              .forEach((v, j) => dv().setUint32(q + 4 * j, v, true));
          });
        }
        dv().setUint32(c + 8, rec.smatConfigs ? list.length : 0, true);
        dv().setUint32(c + 12, rec.smatConfigs, true);
      }
      return 1;
    },
    wgpuAdapterInfoFreeMembers(p) { // the struct is passed by value: p points at the caller's copy
      for (const off of [4, 12, 20, 28]) { const q = u32(p + off); if (q) ex.free(q); }
    },
    // the browser reports no memory heaps: wgpuAdapterGetInfo leaves a chained heap list empty, nothing to free
    wgpuAdapterPropertiesMemoryHeapsFreeMembers(p) {},
    wgpuAdapterHasFeature(adapter, f) { return FEATURES[f] && get(adapter).adapter.features.has(FEATURES[f]) ? 1 : 0; },
    wgpuAdapterGetLimits(adapter, p) { return limitsOut(get(adapter).adapter.limits, p); },
    wgpuAdapterRequestDevice(adapter, desc, info) {
      const ci = callbackInfo(info);
      const a = get(adapter).adapter;
      const features = [];
      const n = u32(desc + 12), fp = u32(desc + 16);
      for (let i = 0; i < n; i++) { const f = FEATURES[u32(fp + 4 * i)]; if (f) features.push(f); }
      const requiredLimits = {};
      const lp = u32(desc + 20);
      if (lp) {
        for (const [name, type, off] of LIMITS) {
          if (a.limits[name] === undefined) continue;
          const v = type === 'u64' ? dv().getBigUint64(lp + off, true) : u32(lp + off);
          if (type === 'u64' ? v === WHOLE || v === 0n : v === U32_UNDEF || v === 0) continue;
          requiredLimits[name] = Number(v);
        }
      }
      const lost = { fn: u32(desc + 44), u1: u32(desc + 48), u2: u32(desc + 52) };
      const uncaptured = { fn: u32(desc + 60), u1: u32(desc + 64), u2: u32(desc + 68) };
      const p = a.requestDevice({ requiredFeatures: features, requiredLimits }).then((d) => ({ d }), (e) => ({ e }));
      return future(p, (r) => {
        if (!r.d) { callWithMessage(ci.fn, 2, [3, 0, ci.u1, ci.u2], errorMessage(r.e)); return; }
        const rec = { device: r.d, queue: r.d.queue, uncaptured, lost };
        const h = add(rec);
        const hp = ex.malloc(4); // the WGPUDevice the callbacks point at
        dv().setUint32(hp, h, true);
        rec.handlePtr = hp;
        r.d.addEventListener('uncapturederror', (ev) => {
          if (!uncaptured.fn) return;
          const t = ERROR_TYPE[ev.error && ev.error.constructor && ev.error.constructor.name] || 5;
          spontaneous.push(() => callWithMessage(uncaptured.fn, 2, [hp, t, uncaptured.u1, uncaptured.u2], errorMessage(ev.error)));
        });
        r.d.lost.then((li) => {
          if (!lost.fn || rec.released || rec.forcedLoss) return;
          const reason = li.reason === 'destroyed' ? 2 : 1; // Destroyed, Unknown
          spontaneous.push(() => callWithMessage(lost.fn, 2, [hp, reason, lost.u1, lost.u2], li.message));
        });
        callWithMessage(ci.fn, 2, [1, h, ci.u1, ci.u2], '');
      });
    },

    // ---------- device ----------
    wgpuDeviceRelease(device) { const r = get(device); if (r) { r.released = true; } release(device); },
    wgpuDeviceDestroy(device) { get(device).device.destroy(); },
    wgpuDeviceGetQueue(device) { return add({ queue: get(device).device.queue }); },
    wgpuDeviceHasFeature(device, f) { return FEATURES[f] && get(device).device.features.has(FEATURES[f]) ? 1 : 0; },
    wgpuDeviceGetLimits(device, p) { return limitsOut(get(device).device.limits, p); },
    wgpuDevicePushErrorScope(device, filter) { get(device).device.pushErrorScope(ERROR_FILTER[filter] || 'validation'); },
    wgpuDevicePopErrorScope(device, info) {
      const ci = callbackInfo(info);
      const p = get(device).device.popErrorScope().then((e) => ({ e }), (x) => ({ x }));
      return future(p, (r) => {
        if (r.x) { callWithMessage(ci.fn, 2, [3, 5, ci.u1, ci.u2], errorMessage(r.x)); return; } // Error, Unknown
        const t = r.e ? ERROR_TYPE[r.e.constructor && r.e.constructor.name] || 5 : 1; // NoError
        callWithMessage(ci.fn, 2, [1, t, ci.u1, ci.u2], r.e ? r.e.message : '');
      });
    },
    // Dawn's test hooks: an uncaptured error as a failing command raises one, and the device lost as in a reset
    wgpuDeviceInjectError(device, type, msg) {
      const r = get(device), m = str(msg), u = r.uncaptured;
      if (u.fn) spontaneous.push(() => callWithMessage(u.fn, 2, [r.handlePtr, type, u.u1, u.u2], m));
    },
    wgpuDeviceForceLoss(device, type, msg) {
      const r = get(device), m = str(msg), l = r.lost;
      r.forcedLoss = true; // the loss below, not the destruction's, is the one reported
      if (l.fn) spontaneous.push(() => callWithMessage(l.fn, 2, [r.handlePtr, type, l.u1, l.u2], m));
      r.device.destroy();
    },
    wgpuDeviceCreateBuffer(device, desc) {
      const label = str(desc + 4);
      const usage = Number(u64(desc + 16));
      const size = Number(u64(desc + 24));
      const mappedAtCreation = u32(desc + 32) !== 0;
      const d = get(device).device;
      return add({ buffer: d.createBuffer({ label, usage, size, mappedAtCreation }), mapped: [], queue: d.queue });
    },
    wgpuDeviceCreateShaderModule(device, desc) {
      let chain = u32(desc), code = '';
      while (chain) { if (u32(chain + 4) === 2) code = str(chain + 8); chain = u32(chain); } // ShaderSourceWGSL
      return add({ module: get(device).device.createShaderModule({ label: str(desc + 4), code }) });
    },
    wgpuDeviceCreateComputePipeline(device, desc) {
      const layout = u32(desc + 12);
      const c = desc + 16;
      const constants = {};
      const n = u32(c + 16), cp = u32(c + 20);
      for (let i = 0; i < n; i++) constants[str(cp + 24 * i + 4)] = dv().getFloat64(cp + 24 * i + 16, true);
      const entryPoint = str(c + 8);
      const compute = { module: get(u32(c + 4)).module, constants };
      if (entryPoint) compute.entryPoint = entryPoint;
      return add({ pipeline: get(device).device.createComputePipeline({ label: str(desc + 4),
        layout: layout ? get(layout).layout : 'auto', compute }) });
    },
    wgpuDeviceCreateBindGroup(device, desc) {
      const entries = [];
      const n = u32(desc + 16), ep = u32(desc + 20);
      for (let i = 0; i < n; i++) {
        const e = ep + 40 * i;
        const resource = { buffer: get(u32(e + 8)).buffer, offset: Number(u64(e + 16)) };
        const size = u64(e + 24);
        if (size !== WHOLE) resource.size = Number(size);
        entries.push({ binding: u32(e + 4), resource });
      }
      return add({ group: get(device).device.createBindGroup({ label: str(desc + 4), layout: get(u32(desc + 12)).layout, entries }) });
    },
    wgpuDeviceCreateCommandEncoder(device, desc) {
      const d = get(device).device;
      return add({ encoder: d.createCommandEncoder(), device: d });
    },
    wgpuDeviceCreateQuerySet(device, desc) {
      const type = u32(desc + 12) === 2 ? 'timestamp' : 'occlusion';
      return add({ querySet: get(device).device.createQuerySet({ type, count: u32(desc + 16) }) });
    },

    // ---------- queue ----------
    wgpuQueueRelease: release,
    wgpuQueueWriteBuffer(queue, buffer, offset, data, size) {
      get(queue).queue.writeBuffer(get(buffer).buffer, Number(offset), ex.memory.buffer, data, size);
    },
    wgpuQueueSubmit(queue, count, cbs) {
      const list = [];
      const after = [];
      for (let i = 0; i < count; i++) { const c = get(u32(cbs + 4 * i)); list.push(c.commandBuffer); if (c.afterSubmit) after.push(c.afterSubmit); }
      get(queue).queue.submit(list);
      after.forEach((f) => f());
    },
    wgpuQueueOnSubmittedWorkDone(queue, info) {
      const ci = callbackInfo(info);
      const p = get(queue).queue.onSubmittedWorkDone().then(() => ({ ok: true }), (e) => ({ e }));
      return future(p, (r) => callWithMessage(ci.fn, 1, [r.ok ? 1 : 3, ci.u1, ci.u2], r.ok ? '' : errorMessage(r.e)));
    },

    // ---------- buffers ----------
    wgpuBufferRelease: release,
    wgpuBufferDestroy(buffer) { get(buffer).buffer.destroy(); },
    wgpuBufferMapAsync(buffer, mode, offset, size, info) {
      const ci = callbackInfo(info);
      const m = (mode & 1n ? 1 : 0) | (mode & 2n ? 2 : 0); // GPUMapMode.READ / WRITE
      const p = get(buffer).buffer.mapAsync(m, offset, size).then(() => ({ ok: true }), (e) => ({ e }));
      return future(p, (r) => callWithMessage(ci.fn, 1, [r.ok ? 1 : 3, ci.u1, ci.u2], r.ok ? '' : errorMessage(r.e)));
    },
    // the mapped bytes copied into wasm memory (freed at unmap): wasm cannot address the browser's mapping
    wgpuBufferGetConstMappedRange(buffer, offset, size) {
      const b = get(buffer);
      let range;
      try { range = b.buffer.getMappedRange(offset, size); } catch (e) { return 0; }
      const p = ex.malloc(size || 1);
      u8().set(new Uint8Array(range), p);
      b.mapped.push(p);
      return p;
    },
    wgpuBufferUnmap(buffer) {
      const b = get(buffer);
      for (const p of b.mapped) ex.free(p);
      b.mapped = [];
      b.buffer.unmap();
    },

    // ---------- commands ----------
    wgpuCommandEncoderRelease: release,
    wgpuCommandBufferRelease: release,
    wgpuCommandEncoderFinish(encoder, desc) {
      const e = get(encoder);
      return add({ commandBuffer: e.encoder.finish(), afterSubmit: e.afterSubmit });
    },
    wgpuCommandEncoderCopyBufferToBuffer(encoder, src, srcOffset, dst, dstOffset, size) {
      get(encoder).encoder.copyBufferToBuffer(get(src).buffer, Number(srcOffset), get(dst).buffer, Number(dstOffset),
        Number(size));
    },
    wgpuCommandEncoderResolveQuerySet(encoder, qs, first, count, dst, dstOffset) {
      get(encoder).encoder.resolveQuerySet(get(qs).querySet, first, count, get(dst).buffer, Number(dstOffset));
    },
    wgpuCommandEncoderBeginComputePass(encoder, desc) {
      if (profile && !desc) return add({ pass: profilePass(get(encoder)) });
      const d = {};
      const tw = desc ? u32(desc + 12) : 0;
      if (tw) {
        d.timestampWrites = { querySet: get(u32(tw + 4)).querySet };
        if (u32(tw + 8) !== U32_UNDEF) d.timestampWrites.beginningOfPassWriteIndex = u32(tw + 8);
        if (u32(tw + 12) !== U32_UNDEF) d.timestampWrites.endOfPassWriteIndex = u32(tw + 12);
      }
      return add({ pass: get(encoder).encoder.beginComputePass(d) });
    },
    wgpuComputePassEncoderSetPipeline(pass, pipe) { get(pass).pass.setPipeline(get(pipe).pipeline); },
    wgpuComputePassEncoderSetBindGroup(pass, index, group, n, offsets) {
      const dyn = [];
      for (let i = 0; i < n; i++) dyn.push(u32(offsets + 4 * i));
      get(pass).pass.setBindGroup(index, group ? get(group).group : null, dyn);
    },
    wgpuComputePassEncoderDispatchWorkgroups(pass, x, y, z) { get(pass).pass.dispatchWorkgroups(x, y, z); },
    wgpuComputePassEncoderDispatchWorkgroupsIndirect(pass, buffer, offset) {
      get(pass).pass.dispatchWorkgroupsIndirect(get(buffer).buffer, Number(offset));
    },
    wgpuComputePassEncoderEnd(pass) { get(pass).pass.end(); },
    wgpuComputePassEncoderRelease: release,

    // ---------- pipelines, groups, query sets ----------
    wgpuComputePipelineRelease: release,
    // the layout object made once per pipeline and index (the recorder asks for it once per dispatch it finalizes;
    // each call through the binding would make a new object)
    wgpuComputePipelineGetBindGroupLayout(pipe, index) {
      const p = get(pipe);
      if (!p.layouts) p.layouts = [];
      if (!p.layouts[index]) p.layouts[index] = p.pipeline.getBindGroupLayout(index);
      return add({ layout: p.layouts[index] });
    },
    wgpuBindGroupLayoutRelease: release,
    wgpuBindGroupRelease: release,
    wgpuShaderModuleRelease: release,
    wgpuQuerySetRelease(qs) { const q = get(qs); if (q) q.querySet.destroy(); release(qs); },
  };
  return { imports, attach(exports) { ex = exports; }, objects: objs, stats, profile };
}
