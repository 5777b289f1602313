// Loads the GGUF file of a chat model (`glass export --format gguf` of a `glass finetune` run)
// into llama.cpp (node-llama-cpp, CPU only) and answers exam prompts greedily the way a chat
// front end does, with nothing of glass's but the file:
//   1. the prompt is the file's own `tokenizer.chat_template` rendered by a Jinja engine
//      (@huggingface/jinja, the one node-llama-cpp renders templates with) for the conversation,
//      with the generation prompt;
//   2. llama.cpp tokenizes that text with special tokens parsed (each <|im_start|> and
//      <|im_end|> its one control id, checked against the file's vocabulary);
//   3. it continues greedily (temperature 0) until a token of its end-of-generation set (the
//      file's eos/eot ids) or the cap of tokens, and detokenizes the answer without it.
// Each answer is compared with glass's (`glass chat --temp 0 -p`, saved by the caller); the
// count of identical answers must reach MIN_SAME.
// Usage: node greedy_chat.mjs MODEL.gguf PROMPTS.jsonl ANSWERS_DIR CONTEXT MAX_TOKENS MIN_SAME
//   PROMPTS.jsonl: one {"messages": [...]} per line, ending with the user's turn;
//   ANSWERS_DIR/N.txt: glass's answer to line N (from 1), with the newline glass chat ends it by.
// Exits 0 when at least MIN_SAME answers agree, 1 with the differences otherwise.
import {readFileSync} from "node:fs";
import {Template} from "@huggingface/jinja";
import {getLlama, LlamaCompletion, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, promptsPath, answersDir, contextArg, maxArg, minArg] = process.argv.slice(2);
if (minArg === undefined) {
    console.error("usage: node greedy_chat.mjs MODEL.gguf PROMPTS.jsonl ANSWERS_DIR CONTEXT MAX_TOKENS MIN_SAME");
    process.exit(2);
}
const fail = (message) => { console.error("FAIL: " + message); process.exit(1); };

const conversations = readFileSync(promptsPath, "utf8").split("\n").filter((l) => l !== "")
    .map((l) => JSON.parse(l).messages);
const glassAnswers = conversations.map((_, i) =>
    readFileSync(`${answersDir}/${i + 1}.txt`, "utf8").replace(/\n$/, ""));

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});

// 1. The template the file carries, and the control ids of its markers.
const source = model.fileInfo.metadata.tokenizer.chat_template;
if (typeof source !== "string") fail("the file has no tokenizer.chat_template");
const template = new Template(source);
const imStart = model.tokenize("<|im_start|>", true);
const imEnd = model.tokenize("<|im_end|>", true);
if (imStart.length !== 1 || imEnd.length !== 1)
    fail(`llama.cpp does not read the markers as single tokens: [${imStart}] [${imEnd}]`);
if (!model.isEogToken(imEnd[0])) fail(`<|im_end|> (id ${imEnd[0]}) does not end generation`);
if (model.tokenize("<|im_end|>", false).length === 1)
    fail("plain text \"<|im_end|>\" became the control token");
console.log(`<|im_start|> = ${imStart[0]}, <|im_end|> = ${imEnd[0]} (end of generation)`);

const context = await model.createContext({
    contextSize: Number(contextArg),
    sequences: 1,
    // One thread: on a machine busier than its cores, llama.cpp's threads wait for each other
    // spinning, and a generation of a few tokens took minutes (once none ended in 5).
    threads: 1,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
});
const sequence = context.getSequence();
const completion = new LlamaCompletion({contextSequence: sequence});
let same = 0;
let ended = 0;
const differences = [];
for (const [i, messages] of conversations.entries()) {
    // 2. The rendered conversation, tokenized with its markers as control ids.
    const text = template.render({messages, add_generation_prompt: true});
    const prompt = model.tokenize(text, true);
    const turns = prompt.filter((t) => t === imStart[0]).length;
    if (turns !== messages.length + 1)
        fail(`line ${i + 1}: ${turns} <|im_start|> ids in the prompt, ${messages.length + 1} expected`);
    // 3. Greedy answer up to end of generation (no repeat penalty: pure argmax), from an empty
    // KV cache. (LlamaCompletion, not a loop over sequence.evaluate left with `break`: clearing
    // a sequence whose generator was abandoned could hang.)
    await sequence.clearHistory();
    const answer = [];
    const result = await completion.generateCompletionWithMeta(prompt, {
        temperature: 0,
        repeatPenalty: false,
        maxTokens: Number(maxArg),
        onToken: (tokens) => answer.push(...tokens),
    });
    if (result.metadata.stopReason === "eogToken") ++ended;
    const got = model.detokenize(answer.filter((t) => !model.isEogToken(t)), true, prompt);
    if (got === glassAnswers[i]) ++same;
    else differences.push(`line ${i + 1} ${JSON.stringify(messages.at(-1).content)}: ` +
        `llama.cpp ${JSON.stringify(got)}, glass ${JSON.stringify(glassAnswers[i])}`);
}
for (const d of differences) console.log("differs: " + d);
console.log(`llama.cpp and glass give the same greedy answer to ${same} of ${conversations.length} ` +
    `prompts (${ended} ended at <|im_end|> in llama.cpp)`);
await context.dispose();
await model.dispose();
await llama.dispose();
if (same < Number(minArg)) fail(`${same} identical answers, ${minArg} needed`);
