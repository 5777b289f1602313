// Loads a GGUF file written by `glass export --format gguf` into llama.cpp (through the npm
// package node-llama-cpp, CPU only) and checks three things against GlassLLM, whose answers the
// caller saved from `glass sample --json --temperature 0`:
//   1. llama.cpp tokenizes the prompt into the ids glass read it as (`prompt_tokens`);
//   2. its greedy continuation (temperature 0) of those ids is glass's, id for id (`tokens`);
//   3. the continuation detokenizes to glass's text.
// Usage: node greedy.mjs MODEL.gguf GLASS.json CONTEXT [BOUND]
// Exits 0 when all hold, 1 with a message saying what differs otherwise.
//
// With BOUND (nats), for a Q8_0/Q4_0 file and glass on the same weights read back
// (`glass sample --quantize`): llama.cpp rounds the activations too (each product with a Q8_0
// or Q4_0 matrix takes its input as Q8_0 blocks; an F16 matrix, its input in F16), so its
// logits differ from glass's by a little, and a near tie may go the other way. The rule then:
// llama.cpp is fed glass's continuation, and at every position its greedy choice must be
// glass's token, or one whose logit exceeds glass's token's by at most BOUND in llama.cpp's own
// logits (a near tie: the log of the two probabilities' ratio). Steps 2 and 3 (free-running)
// are reported, not required: after a near tie the two continuations go their own ways.
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, glassJson, contextArg, boundArg] = process.argv.slice(2);
const bound = boundArg === undefined ? null : Number(boundArg);
if (contextArg === undefined || Number.isNaN(bound)) {
    console.error("usage: node greedy.mjs MODEL.gguf GLASS.json CONTEXT [BOUND]");
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
if (bound !== null) {
    await nearTieRule(generated);
    process.exit(0);
}
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

/// The rule for a quantized file (see the top): glass's continuation fed to llama.cpp, its
/// greedy choice at each position compared with glass's token.
async function nearTieRule(generated) {
    const free = firstDifference(generated, want);
    console.log(free === want.length
        ? `free-running: the greedy continuations agree for all ${want.length} tokens`
        : `free-running: the greedy continuations agree for ${free} tokens, then differ`);
    await sequence.clearHistory();
    const fed = [...tokens, ...want.slice(0, -1)];
    const first = tokens.length - 1;  // the position whose next token is want[0]
    const input = fed.map((token, i) => i < first ? token : [token, {
        generateNext: {probabilities: true, options: {temperature: 1, topK: 0, topP: 1, minP: 0}},
    }]);
    const out = await sequence.controlledEvaluate(input);
    let ties = 0, largest = 0;
    for (let i = 0; i < want.length; ++i) {
        const probabilities = out[first + i]?.next?.probabilities;
        if (probabilities === undefined) fail(`llama.cpp gave no probabilities at token ${i}`);
        const [top, pTop] = probabilities.entries().next().value;
        if (top === want[i]) continue;
        const gap = Math.log(pTop / (probabilities.get(want[i]) ?? 0));
        largest = Math.max(largest, gap);
        console.log(`token ${i}: llama.cpp prefers ${top} to glass's ${want[i]} by ${gap.toFixed(4)} nats`);
        if (!(gap <= bound))
            fail(`at token ${i} llama.cpp's choice beats glass's token by ${gap.toFixed(4)} nats, more than the bound ${bound}`);
        ++ties;
    }
    console.log(`OK: fed glass's ${want.length} tokens, llama.cpp chooses glass's token at ` +
        `${want.length - ties} positions and a near tie (within ${bound} nats, at most ` +
        `${largest.toFixed(4)}) at ${ties}`);
    await context.dispose();
    await model.dispose();
    await llama.dispose();
}
await context.dispose();
await model.dispose();
await llama.dispose();
