// Loads a GGUF file written by `glass export --format gguf` into llama.cpp (through the npm
// package node-llama-cpp, CPU only) and checks three things against GlassLLM, whose answers the
// caller saved from `glass sample --json --temperature 0`:
//   1. llama.cpp tokenizes the prompt into the ids glass read it as (`prompt_tokens`);
//   2. its greedy continuation (temperature 0) of those ids is glass's, id for id (`tokens`);
//   3. the continuation detokenizes to glass's text.
// Usage: node greedy.mjs MODEL.gguf GLASS.json CONTEXT
// Exits 0 when all hold, 1 with a message saying what differs otherwise.
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, glassJson, contextArg] = process.argv.slice(2);
if (contextArg === undefined) {
    console.error("usage: node greedy.mjs MODEL.gguf GLASS.json CONTEXT");
    process.exit(2);
}
const fail = (message) => { console.error("FAIL: " + message); process.exit(1); };
const firstDifference = (a, b) => {
    let i = 0;
    while (i < a.length && i < b.length && a[i] === b[i]) ++i;
    return i;
};

const glass = JSON.parse(readFileSync(glassJson, "utf8"));
const prompt = glass.prompt;
const wantPrompt = glass.prompt_tokens.map((t) => t.id);
const want = glass.samples[0].tokens.map((t) => t.id);
const wantText = glass.samples[0].text;

// Prebuilt CPU binaries of the pinned release only: never compile, never use a GPU.
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});

const tokens = model.tokenize(prompt);
console.log(`prompt:    ${JSON.stringify(prompt)}`);
console.log(`llama.cpp: [${tokens.join(", ")}]`);
console.log(`glass:     [${wantPrompt.join(", ")}]`);
if (tokens.length !== wantPrompt.length || firstDifference(tokens, wantPrompt) !== tokens.length)
    fail(`llama.cpp tokenizes the prompt otherwise than glass, from token ${firstDifference(tokens, wantPrompt)} on`);
console.log(`OK: the same ${tokens.length} prompt ids`);

// F32 keys and values in the KV cache, as GlassLLM keeps them (llama.cpp's default is F16).
const context = await model.createContext({
    contextSize: Number(contextArg),
    sequences: 1,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
});
const sequence = context.getSequence();
const generated = [];
for await (const token of sequence.evaluate(tokens, {temperature: 0})) {
    generated.push(token);
    if (generated.length === want.length) break;
}
console.log(`llama.cpp: [${generated.join(", ")}]`);
console.log(`glass:     [${want.join(", ")}]`);
if (firstDifference(generated, want) !== want.length)
    fail(`the greedy continuations differ from token ${firstDifference(generated, want)} on`);

// The continuation's text, detokenized after the prompt's tokens (node-llama-cpp's lastTokens:
// so that the first token keeps its leading space, as in glass).
const text = model.detokenize(generated, false, tokens);
console.log(`llama.cpp: ${JSON.stringify(text)}`);
console.log(`glass:     ${JSON.stringify(wantText)}`);
if (text !== wantText)
    fail(`the texts differ from character ${firstDifference([...text], [...wantText])} on`);
console.log(`OK: the greedy continuations agree for ${want.length} tokens`);
await context.dispose();
await model.dispose();
await llama.dispose();
