// The chat panel of the live page (live.html): a conversation with a model fine-tuned on
// conversations, through POST /api/chat (serve/routes_chat.cpp). The page keeps the messages and
// sends them all at each turn; the server renders them with the chat template `glass chat` uses
// and streams the answer as JSON lines. A model without the chat tokens (a base model): the
// panel is greyed out and says why. Typing /reset (or the Reset button) clears the conversation.
"use strict";

const chat = {
  messages: [],  // [{role, content}] sent so far, the system message apart
  busy: false,
};

// A line of the conversation view: who speaks and what (textContent: never HTML).
function chatLine(role, text) {
  const line = make("div", "chat-msg chat-" + role);
  line.appendChild(make("span", "chat-role", role));
  const body = make("span", "chat-text", text);
  line.appendChild(body);
  $("chat-log").appendChild(line);
  $("chat-log").scrollTop = $("chat-log").scrollHeight;
  return body;
}

function chatReset() {
  chat.messages = [];
  $("chat-log").textContent = "";
  $("chat-note").textContent = "new conversation";
}

// The sampler settings of the panel, as /api/chat takes them.
function chatSettings() {
  const int = (id, lo, d) => Math.max(lo, Math.floor(Number($(id).value)) || d);
  return {
    temperature: Math.max(0, Number($("chat-temperature").value) || 0),
    top_k: Math.min(int("chat-top-k", 0, 0), live.info.config.vocab_size),
    top_p: Math.min(1, Math.max(0.01, Number($("chat-top-p").value) || 1)),
    seed: int("chat-seed", 0, 0),
    n: Math.min(int("chat-n", 1, 1), live.info.max_sample_tokens),
  };
}

// How an answer ended, when it is worth saying.
function chatEndNote(last) {
  if (last.end === "token_cap") return "(answer cut at " + last.tokens + " tokens: raise Tokens)";
  if (last.context_full) return "(the conversation filled the model's window of " + last.window + " " + live.info.unit + ": /reset)";
  return last.tokens_left + " of " + last.window + " " + live.info.unit + " left in the window";
}

// Reads the JSON lines of an answer into `body`; returns the last line (or throws its error).
async function readChatStream(r, body) {
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let pending = "", last = null;
  const take = (line) => {
    if (!line) return;
    const j = JSON.parse(line);
    if (j.error) throw new Error(j.error);
    if (j.done) last = j; else body.textContent += j.text;
  };
  for (;;) {
    const { done, value } = await reader.read();
    pending += decoder.decode(value || new Uint8Array(), { stream: !done });
    const lines = pending.split("\n");
    pending = lines.pop();
    lines.forEach(take);
    if (done) break;
  }
  take(pending);
  if (!last) throw new Error("the answer ended early");
  return last;
}

async function chatSend() {
  const input = $("chat-input");
  const text = input.value.trim();
  if (!text || chat.busy) return;
  input.value = "";
  if (text === "/reset") { chatReset(); return; }
  const system = $("chat-system").value.trim();
  const messages = (system ? [{ role: "system", content: system }] : []).concat(chat.messages, [{ role: "user", content: text }]);
  chatLine("user", text);
  const body = chatLine("assistant", "");
  chat.busy = true;
  $("chat-send").disabled = true;
  try {
    const r = await fetch("api/chat", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ messages, raw: true, ...chatSettings() }) });
    if (!r.ok) throw new Error((await r.json()).error);
    const last = await readChatStream(r, body);
    chat.messages.push({ role: "user", content: text }, { role: "assistant", content: last.text });
    $("chat-note").textContent = chatEndNote(last);
    document.body.dataset.chatAnswers = String(chat.messages.length / 2);
    document.body.dataset.chatEnd = last.end;
  } catch (e) {
    body.parentNode.remove();  // the turn was not taken: the history stays as it was
    $("chat-log").lastChild.remove();
    input.value = text;
    $("chat-note").textContent = "not sent: " + e.message;
  } finally {
    chat.busy = false;
    $("chat-send").disabled = false;
  }
}

// Greys the panel out for a model that cannot chat (GET /api/info's "chat"). The address may
// carry #chat=TEXT: TEXT is sent as the first message once the model is known (a demo; the
// browser test chats this way).
function chatAvailability(event) {
  const can = !!live.info.chat;
  document.body.dataset.chat = can ? "yes" : "no";
  $("chat-section").classList.toggle("disabled", !can);
  for (const e of $("chat-section").querySelectorAll("input, textarea, button")) e.disabled = !can;
  if (!can) $("chat-note").textContent = "this model has no chat tokens (<|im_start|>, <|im_end|>): it is a base model. " +
      "Fine-tune it on conversations (glass finetune) and serve the fine-tuned checkpoint to chat with it.";
  else if ($("chat-note").textContent.startsWith("this model has no chat")) $("chat-note").textContent = "";
  const first = readHash().chat;  // live.js
  if (can && event.type === "glass:info" && first) { $("chat-input").value = first; chatSend(); }
}

function setUpChat() {
  $("chat-send").addEventListener("click", chatSend);
  $("chat-reset").addEventListener("click", chatReset);
  $("chat-input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); chatSend(); }
  });
  document.addEventListener("glass:info", chatAvailability);
  document.addEventListener("glass:save", chatAvailability);
}

setUpChat();
