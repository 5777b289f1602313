#!/usr/bin/env bash
# From nothing to a model that answers: builds glass, pretrains a small model on the bundled
# corpus, writes a larger training set of the project's chat tasks (the same items as data/chat/:
# no word or number pair of the exam is in it), fine-tunes on it with the loss on the answers
# only, and grades the exam, beside the base model's score on the same exam (its baseline).
#
# Usage: bash scripts/chat.sh [OUT]   (default runs/chat-recipe; OUT/base is the pretrained
# model, OUT/chat the fine-tune, OUT/exam-*.json the exams). Every step is skipped when its
# result is already there, so a second call goes on where the first stopped.
# The recipe (steps, rates, sizes) is the one measured in README.md's "Chat" section; change it
# here and the figures there no longer hold.
set -euo pipefail
cd "$(dirname "$0")/.."
GLASS_WITH_BROWSER=0 GLASS_WITH_NODE=0 bash scripts/install-deps.sh
bash scripts/build.sh glass make_chat_tasks

out="${1:-runs/chat-recipe}"
mkdir -p "$out"
# The exam's skills are learnt in the fine-tune: a short pretraining, and the time goes to a
# deeper model (copying letters needs depth: 6 layers at 5000 steps beat 4 layers at 8000) and to
# steps (addition comes last: 10/62 after 5000 fine-tuning steps, 54/62 after 15000).
MODEL_FLAGS=(--n-layers 6) # the default model otherwise: d_model 128, 4 heads (2 kv), ffn 344
PRETRAIN_ITERS=600
TRAIN_CONVERSATIONS=60000
FINETUNE_ITERS=15000
FINETUNE_BATCH=16
FINETUNE_LR=2e-3
FINETUNE_WARMUP=200

[ -e "$out/base/model.safetensors" ] ||
  ./build/glass train --out "$out/base" --iters "$PRETRAIN_ITERS" "${MODEL_FLAGS[@]}" \
    --no-interp-record
# Seed 1 as data/chat/: the words and number pairs are split the same way, so the training set
# grows (more conversations, more of the training words) and the shipped exam stays held out.
[ -e "$out/tasks/train.jsonl" ] ||
  ./build/tools/make_chat_tasks --seed 1 --train "$TRAIN_CONVERSATIONS" --val 250 --exam 250 \
    --out "$out/tasks"
[ -e "$out/chat/model.safetensors" ] ||
  ./build/glass finetune --from "$out/base" --chat "$out/tasks/train.jsonl" \
    --val data/chat/val.jsonl --out "$out/chat" --iters "$FINETUNE_ITERS" \
    --batch-size "$FINETUNE_BATCH" --lr "$FINETUNE_LR" --warmup "$FINETUNE_WARMUP" \
    --eval-every 1000 --no-interp-record
./build/glass eval -m "$out/base" --chat data/chat/exam.jsonl --base --json >"$out/exam-base.json"
./build/glass eval -m "$out/chat" --chat data/chat/exam.jsonl --json >"$out/exam-chat.json"
./build/glass eval -m "$out/chat" --chat data/chat/exam.jsonl | tee "$out/exam-chat.txt"
echo "chat.sh: the base model's exam (the baseline) is in $out/exam-base.json; talk with the" \
  "fine-tune: ./build/glass chat -m $out/chat"
