#!/usr/bin/env python3
"""Chat-template fixtures for tests/test_chat_template.c: each model's chat template rendered by transformers'
own renderer over a set of conversations, written as tests/data/chat/<name>.json (the template text, the
variables the template sees, and the expected prompt string or the expected error).

  python3 tools/refs/make_chat_refs.py OUT_DIR            # on a machine with transformers (the device: 5.17)
  python3 tools/refs/make_chat_refs.py OUT_DIR --jinja2   # without transformers: jinja2 set up as transformers does

Rendering: transformers.utils.chat_template_utils.render_jinja_template, the function apply_chat_template calls
after it has merged the tokenizer's special tokens into the keyword arguments (template_kwargs =
{**special_tokens_map, **kwargs}); it needs no tokenizer. It compiles the template in an ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks, loopcontrols and the {% generation %} tag, with tojson = json.dumps(ensure_ascii=
False, keys unsorted), raise_exception and strftime_now, and renders it with messages, tools (None when not given),
documents (None) and add_generation_prompt. Each fixture records exactly those variables as "vars", so the C test
renders the same inputs. bos_token / eos_token come from the tokenizer_config.json of the model (the two special
tokens wgllm passes; no target template reads others).

Templates: llama3, qwen3, gemma3 from third_party/tokenizers/*/tokenizer_config.json (scripts/fetch_tokenizers.sh);
llama2, mistral_v0.3, qwen2.5, llama3.2 from tools/refs/chat_templates/*.jinja, transcribed from memory (no network
for the Hugging Face files): their fixtures say "transcribed": true; gpt-oss (openai/gpt-oss-120b's harmony template)
and phi-3.5 (microsoft/Phi-3.5-mini-instruct) copied from the llama.cpp v0.5.0 sources' models/templates/."""
import argparse
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name, source, special tokens (None: from the tokenizer_config.json), transcribed
TEMPLATES = [
    ("llama3", "third_party/tokenizers/llama3/tokenizer_config.json", None, False),
    ("qwen3", "third_party/tokenizers/qwen3/tokenizer_config.json", None, False),
    ("gemma3", "third_party/tokenizers/gemma3/tokenizer_config.json", None, False),
    ("llama2", "tools/refs/chat_templates/llama2.jinja", {"bos_token": "<s>", "eos_token": "</s>"}, True),
    ("mistral_v0.3", "tools/refs/chat_templates/mistral_v0.3.jinja", {"bos_token": "<s>", "eos_token": "</s>"}, True),
    ("qwen2.5", "tools/refs/chat_templates/qwen2.5.jinja", {"eos_token": "<|im_end|>"}, True),
    ("llama3.2", "tools/refs/chat_templates/llama3.2.jinja",
     {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}, True),
    # copied, not transcribed: the models' own templates as llama.cpp v0.5.0 keeps them (its models/templates/)
    ("gpt-oss", "tools/refs/chat_templates/gpt-oss.jinja", {"bos_token": "<|startoftext|>", "eos_token": "<|return|>"},
     False),
    ("phi-3.5", "tools/refs/chat_templates/phi-3.5.jinja", {"bos_token": "<s>", "eos_token": "<|endoftext|>"}, False),
]


def token_text(t):
    if isinstance(t, dict):
        return t.get("content")
    return t


def load_templates(required=True):
    """(name, template text, special tokens, source) of each template whose file is present"""
    out = []
    for name, src, specials, transcribed in TEMPLATES:
        path = os.path.join(ROOT, src)
        if not os.path.exists(path):
            if required:
                sys.exit(f"make_chat_refs: {src} is missing (scripts/fetch_tokenizers.sh fetches the tokenizers)")
            continue
        if src.endswith(".json"):
            cfg = json.load(open(path, encoding="utf-8"))
            tmpl = cfg["chat_template"]
            if isinstance(tmpl, list):
                tmpl = {t["name"]: t["template"] for t in tmpl}["default"]
            specials = {}
            for k in ("bos_token", "eos_token"):
                v = token_text(cfg.get(k))
                if v is not None:
                    specials[k] = v
        else:
            tmpl = open(path, encoding="utf-8").read()
        out.append((name, tmpl, specials, {"path": src, "transcribed": transcribed}))
    return out


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Current time (UTC)",
                                      "parameters": {"type": "object", "properties": {}}}}]

SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "What is the capital of France?"}
A1 = {"role": "assistant", "content": "The capital of France is Paris."}
U2 = {"role": "user", "content": "And of Germany?"}


def tool_call_turns(args_as_string=False):
    args = {"city": "Paris", "unit": "celsius"}
    call = {"id": "call00001", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps(args) if args_as_string else args}}
    return [{"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
             "content": "{\"temperature\": 21, \"condition\": \"sunny\"}"}]


def conversations(name):
    """the conversations every template is rendered over (a template may refuse some: the error is the fixture)"""
    c = []

    def add(cname, messages, agp=True, tools=None, **kwargs):
        c.append({"name": cname, "messages": copy.deepcopy(messages), "add_generation_prompt": agp,
                  "tools": copy.deepcopy(tools), "kwargs": kwargs})

    date = {"date_string": "26 Jul 2024"} if name == "llama3.2" else {}
    add("system_user", [SYS, U1], **date)
    add("user_only", [U1], **date)
    add("multi_turn", [SYS, U1, A1, U2], **date)
    add("multi_turn_no_generation_prompt", [SYS, U1, A1, U2], agp=False, **date)
    add("ends_with_assistant", [U1, A1], agp=False, **date)
    add("content_parts", [{"role": "user", "content": [{"type": "text", "text": "Describe "},
                                                       {"type": "text", "text": "this text."}]}], **date)
    add("system_parts", [{"role": "system", "content": [{"type": "text", "text": "Be terse."}]}, U1], **date)
    add("unicode", [{"role": "user", "content": "Grüße 👋 — 你好! «ça va?»\nnew line\ttab \"dq\" 'sq' \\ back"},
                    {"role": "assistant", "content": "Ça va très bien ✓ Σίσυφος"},
                    {"role": "user", "content": "日本語でどうぞ"}], **date)
    add("empty_content", [{"role": "user", "content": ""}, {"role": "assistant", "content": ""},
                          {"role": "user", "content": "x"}], **date)
    add("whitespace", [{"role": "system", "content": "  padded system \n"},
                       {"role": "user", "content": "\n\n  spaced question  \n"},
                       {"role": "assistant", "content": "  answer with spaces \n\n"},
                       {"role": "user", "content": " last "}], **date)
    add("roles_not_alternating", [U1, U2], **date)
    add("tools", [SYS, U1], tools=TOOLS, **date)
    add("tools_no_system", [U1], tools=TOOLS, **date)
    add("tool_call", tool_call_turns(), tools=TOOLS, **date)
    add("tool_call_arguments_string", tool_call_turns(True), tools=TOOLS, **date)
    add("tool_call_then_answer", tool_call_turns() + [{"role": "assistant", "content": "It is 21 °C and sunny."},
                                                      {"role": "user", "content": "Thanks!"}], tools=TOOLS, **date)
    two = tool_call_turns()
    two[1]["tool_calls"].append({"id": "call00002", "type": "function",
                                 "function": {"name": "get_time", "arguments": {}}})
    two.append({"role": "tool", "tool_call_id": "call00002", "name": "get_time", "content": "12:00"})
    add("two_tool_calls", two, tools=TOOLS, **date)
    if name in ("qwen3",):
        add("thinking_disabled", [U1], enable_thinking=False)
        add("thinking_enabled", [U1], enable_thinking=True)
        add("thinking_disabled_multi_turn", [SYS, U1, A1, U2], enable_thinking=False)
        add("reasoning_content", [U1, {"role": "assistant", "content": "Paris.", "reasoning_content": "Easy one."}, U2])
        add("think_in_content", [U1, {"role": "assistant", "content": "<think>\nEasy.\n</think>\n\nParis."}, U2])
        add("think_in_last_assistant", [U1, {"role": "assistant", "content": "<think>\nEasy.\n</think>\n\nParis."}],
            agp=False)
        add("reasoning_after_tool", tool_call_turns() +
            [{"role": "assistant", "content": "Sunny.", "reasoning_content": "Read the tool output."}], tools=TOOLS,
            agp=False)
    if name == "llama3.2":
        add("tools_in_system", [SYS, U1], tools=TOOLS, tools_in_user_message=False, **date)
    return c


def renderer(use_jinja2):
    if not use_jinja2:
        try:
            import transformers
            from transformers.utils.chat_template_utils import render_jinja_template
        except ImportError:
            sys.exit("make_chat_refs: transformers is not installed (--jinja2 renders with jinja2 alone)")

        def render(tmpl, variables):
            v = dict(variables)
            kwargs = {k: v.pop(k) for k in list(v) if k not in ("messages", "tools", "documents",
                                                                   "add_generation_prompt")}
            out = render_jinja_template(conversations=[v["messages"]], tools=v["tools"], documents=v["documents"],
                                        chat_template=tmpl, add_generation_prompt=v["add_generation_prompt"],
                                        **kwargs)
            rendered = out[0] if isinstance(out, tuple) else out
            return rendered[0]

        import jinja2
        return render, f"transformers {transformers.__version__} render_jinja_template, jinja2 {jinja2.__version__}"
    sys.path.insert(0, HERE)
    import jinja2
    from jinja_crosscheck import ENV

    def render(tmpl, variables):
        return ENV.from_string(tmpl).render(**variables)

    return render, f"jinja2 {jinja2.__version__} set up as transformers does (tools/refs/jinja_crosscheck.py)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="output directory (tests/data/chat in the repository)")
    ap.add_argument("--jinja2", action="store_true", help="render with jinja2 alone (no transformers)")
    a = ap.parse_args()
    render, how = renderer(a.jinja2)
    import jinja2
    os.makedirs(a.out, exist_ok=True)
    for name, tmpl, specials, src in load_templates():
        cases = []
        for conv in conversations(name):
            variables = {"messages": conv["messages"], "tools": conv["tools"], "documents": None,
                         "add_generation_prompt": conv["add_generation_prompt"]}
            variables.update(specials)
            variables.update(conv["kwargs"])
            case = {"name": conv["name"], "vars": copy.deepcopy(variables)}
            try:
                case["expected"] = render(tmpl, variables)
            except jinja2.exceptions.TemplateError as e:
                # raise_exception raises TemplateError itself; subclasses are Jinja's own errors
                case["error"] = str(e)
                case["raised"] = type(e) is jinja2.exceptions.TemplateError
            except Exception as e:  # a Python TypeError or the like inside the template
                case["error"] = f"{type(e).__name__}: {e}"
                case["raised"] = False
            cases.append(case)
        fx = {"name": name, "source": src["path"], "transcribed": src["transcribed"], "renderer": how,
              "template": tmpl, "cases": cases}
        path = os.path.join(a.out, f"{name}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(fx, f, ensure_ascii=False, indent=1)
            f.write("\n")
        n_err = sum("error" in c for c in cases)
        print(f"make_chat_refs: {path}: {len(cases)} cases ({n_err} refused by the template)")


if __name__ == "__main__":
    main()
