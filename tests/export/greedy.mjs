// Loads a GGUF file written by `glass export --format gguf` into llama.cpp (through the npm
// package node-llama-cpp, CPU only) and checks two things against GlassLLM:
//   1. the prompt is tokenized into one token per character, each token detokenizing to its
//      character;
//   2. the greedy continuation (temperature 0) of the prompt equals the expected text, which the
//      caller got from `glass sample --temperature 0`.
// Usage: node greedy.mjs MODEL.gguf PROMPT EXPECTED CONTEXT
// Exits 0 when both hold, 1 with a message saying what differs otherwise.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, prompt, expected, contextArg] = process.argv.slice(2);
if (expected === undefined || contextArg === undefined) {
    console.error("usage: node greedy.mjs MODEL.gguf PROMPT EXPECTED CONTEXT");
    process.exit(2);
}
const fail = (message) => { console.error("FAIL: " + message); process.exit(1); };

// Prebuilt CPU binaries of the pinned release only: never compile, never use a GPU.
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});

const chars = [...prompt];  // code points, as GlassLLM's tokenizer splits text
const tokens = model.tokenize(prompt);
if (tokens.length !== chars.length)
    fail(`llama.cpp made ${tokens.length} tokens of the ${chars.length}-character prompt: [${tokens.join(", ")}]`);
tokens.forEach((token, i) => {
    const piece = model.detokenize([token]);
    if (piece !== chars[i]) fail(`token ${i} (${token}) detokenizes to ${JSON.stringify(piece)}, not ${JSON.stringify(chars[i])}`);
});
console.log(`tokenized: ${chars.length} characters -> ${chars.length} tokens [${tokens.join(", ")}]`);

// F32 keys and values in the KV cache, as GlassLLM keeps them (llama.cpp's default is F16).
const context = await model.createContext({
    contextSize: Number(contextArg),
    sequences: 1,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
});
const sequence = context.getSequence();
const want = [...expected];
const generated = [];
for await (const token of sequence.evaluate(tokens, {temperature: 0})) {
    generated.push(token);
    if (generated.length === want.length) break;
}
const text = generated.map((t) => model.detokenize([t])).join("");
console.log(`llama.cpp: ${JSON.stringify(text)}`);
console.log(`glass:     ${JSON.stringify(expected)}`);
if (text !== expected) {
    const got = [...text];
    let i = 0;
    while (i < got.length && got[i] === want[i]) ++i;
    fail(`the continuations differ from character ${i} on`);
}
console.log(`OK: the greedy continuations agree for ${want.length} characters`);
await context.dispose();
await model.dispose();
await llama.dispose();
