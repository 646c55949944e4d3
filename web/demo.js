// The demo page's behaviour (web/index.html): loads the engine on navigator.gpu, loads the picked model with a
// progress bar, and runs a chat (the model's own template) or, for a model without one, a text continuation, the
// reply streamed into the page as the engine emits it; Stop ends it; the speed line shows tokens per second.
import { loadWgllm } from './wgllm.js';

const $ = (id) => document.getElementById(id);
const status = (t) => { $('status').textContent = t; };
let wg = null, model = null, busy = false;
let messages = []; // the conversation: { role, content }

function add(role, text) {
  const d = document.createElement('div');
  d.className = `msg ${role}`;
  d.textContent = text;
  $('log').append(d);
  $('log').scrollTop = $('log').scrollHeight;
  return d;
}

// a chat template to talk through: not "none" (plain text) nor "unrunnable" (the model's own is outside the subset)
const chats = () => !!model && !['', 'none', 'unrunnable'].includes(model.info.chatTemplate);

function setBusy(b) {
  busy = b;
  $('send').disabled = b || !model;
  $('stop').disabled = !b;
  $('input').disabled = !model;
  $('clear').disabled = b || !model;
  for (const id of ['gguf', 'dir', 'bundled', 'q4']) $(id).disabled = b;
}

async function start() {
  if (!navigator.gpu) {
    status('this browser has no WebGPU (navigator.gpu): Chromium 137+ with WebGPU enabled');
    return;
  }
  try {
    wg = await loadWgllm({ gpu: navigator.gpu, log: (level, m) => add('system', m) });
  } catch (e) {
    status(`cannot start: ${e.message}`);
    return;
  }
  status(`engine ${wg.version} ready: pick a model`);
  // make web copies the bundled 3.7M-parameter model beside the page; offer it when it is there
  fetch('./models/default.gguf', { method: 'HEAD' }).then((r) => { if (r.ok) $('bundled').hidden = false; }, () => {});
}

async function load(source, name) {
  if (busy) return;
  setBusy(true);
  if (model) { await model.free(); model = null; }
  messages = [];
  $('log').textContent = '';
  $('progress').hidden = false;
  $('progress').value = 0;
  status(`loading ${name}…`);
  const t0 = performance.now();
  try {
    model = await wg.loadModel(source, {
      weights: $('q4').checked ? 'q4' : 'native',
      onProgress: (f) => { $('progress').value = f; status(`loading ${name}: ${(100 * f).toFixed(0)}%`); },
    });
    const i = model.info;
    $('info').textContent = `${i.architecture}, ${i.nLayer} layers, ${i.nEmbd} wide, vocabulary ${i.nVocab}; ` +
      `${(i.weightBytes / 1048576).toFixed(1)} MiB of weights (${i.weights}) on ${i.adapter}; ` +
      (chats() ? `chat template ${i.chatTemplate}` : 'no chat template: text continuation');
    status(`${name} loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    $('input').placeholder = chats() ? 'Type a message (Enter sends, Shift+Enter for a new line)'
      : 'Type the start of a text to continue (Enter sends)';
  } catch (e) {
    status(`loading ${name} failed: ${e.message}`);
    model = null;
  } finally {
    $('progress').hidden = true;
    setBusy(false);
  }
}

async function send() {
  const text = $('input').value;
  if (!model || busy || !text.trim()) return;
  $('input').value = '';
  setBusy(true);
  const chat = chats();
  add('user', text);
  const out = add('assistant', chat ? '' : text);
  let pieces = 0;
  const t0 = performance.now();
  const opts = {
    maxTokens: Number($('max').value) || 128,
    temperature: Number($('temp').value),
    onText: (t) => {
      out.textContent += t;
      pieces++;
      $('log').scrollTop = $('log').scrollHeight;
      $('speed').textContent = `${pieces} pieces, ${(pieces / ((performance.now() - t0) / 1000)).toFixed(1)}/s`;
    },
  };
  try {
    let r;
    if (chat) {
      messages.push({ role: 'user', content: text });
      r = await model.chat(messages, opts);
      messages.push({ role: 'assistant', content: r.text });
    } else {
      r = await model.generate(text, opts);
    }
    const s = r.stats;
    $('speed').textContent = `${s.generatedTokens} tokens, ${(s.generatedTokens / s.decodeSeconds).toFixed(1)} tok/s ` +
      `(prompt ${s.promptTokens} tokens in ${s.prefillSeconds.toFixed(2)} s; ${s.stopReason})`;
    out.dataset.stop = s.stopReason;
  } catch (e) {
    add('system', `generation failed: ${e.message}`);
  } finally {
    setBusy(false);
    $('input').focus();
  }
}

$('gguf').addEventListener('change', (e) => { const f = e.target.files[0]; if (f) load(f, f.name); });
$('dir').addEventListener('change', (e) => {
  const files = [...e.target.files];
  if (files.length) load(files, files[0].webkitRelativePath.split('/')[0] || 'model directory');
});
$('bundled').addEventListener('click', () => load(new URL('./models/default.gguf', location.href).href, 'the bundled model'));
$('send').addEventListener('click', send);
$('stop').addEventListener('click', () => { if (model) model.stop(); });
$('clear').addEventListener('click', () => { messages = []; $('log').textContent = ''; });
$('input').addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); send(); } });
start();
