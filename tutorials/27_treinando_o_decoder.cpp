// Capítulo 27 — Treinando o decoder inteiro num texto.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>

#include "autograd/ops.hpp"
#include "bigrama.hpp"
#include "common.hpp"
#include "data/batches.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/clip.hpp"
#include "train/schedule.hpp"
#include "treino_rapido.hpp"

using namespace glass;

// A model trained for the answers of the Experimente.
struct Treinado {
  std::unique_ptr<Decoder> modelo;
  double perda_final = 0;  // mean training-batch loss of the last 20 steps
};

// Trains a fresh copy of the chapter's model (seed 21, batches seed 22, the fast path) on
// `treino` for `passos` steps with the chapter's schedule, clipping the gradient at `max_norm`; calls
// `depois_do_passo(passo, modelo)` after steps 1..passos.
static Treinado treinar(const ModelConfig& cfg, const std::vector<std::int32_t>& treino,
                        long passos, double max_norm,
                        const std::function<void(long, const Decoder&)>& depois_do_passo = {}) {
  Treinado r;
  ModelConfig rapido = cfg;
  rapido.ops_path = OpsPath::fast;  // the path glass train uses: the same numbers, sooner
  r.modelo = std::make_unique<Decoder>(rapido, /*seed=*/21);
  BatchSampler lotes(treino, 16, cfg.context_length, /*seed=*/22);
  AdamW otimizador(r.modelo->named_parameters());
  LrSchedule agenda;
  agenda.lr_max = 3e-3;
  agenda.min_lr = 3e-4;
  agenda.warmup = 20;
  agenda.decay_iters = passos;
  Ids x, y;
  for (long it = 0; it < passos; ++it) {
    lotes.next(x, y);
    Tensor perda = cross_entropy(r.modelo->forward(x), y);
    otimizador.zero_grad();
    perda.backward();
    clip_grad_norm(r.modelo->parameters(), max_norm);
    otimizador.step(agenda.at(it));
    if (it >= passos - 20) r.perda_final += perda.item() / 20;
    if (depois_do_passo) depois_do_passo(it + 1, *r.modelo);
  }
  return r;
}

int main() {
  tut::capitulo(27, "Treinando o decoder num texto");
  tut::novo(
      "o laço de treino completo (lotes, Decoder, entropia cruzada, clipping, AdamW, agenda) e a validação contra o bigrama.");
  tut::texto(
      "É o capítulo 12 com o modelo de verdade. A cada passo:\n"
      "  1. sorteie B janelas de T caracteres do texto de treino (x, y: capítulo 26);\n"
      "  2. logits = modelo(x), de forma (B, T, V); perda = entropia cruzada com y;\n"
      "  3. zere os gradientes, backward();\n"
      "  4. corte a norma global do gradiente em 1 (clip_grad_norm): se a norma de todos os\n"
      "     gradientes juntos passa de 1, todos são multiplicados por 1/norma; a direção fica,\n"
      "     o tamanho do passo não explode num lote ruim;\n"
      "  5. AdamW com o lr da agenda (capítulo 25).\n"
      "Antes e depois, a perda na validação (capítulo 26). `glass train` faz o mesmo\n"
      "laço (train/trainer.cpp), com registro, checkpoints e amostras. Aqui, um modelo\n"
      "pequeno e poucos passos, para rodar em segundos.");

  // Os dados: o começo de Dom Casmurro, 90% treino e 10% validação.
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::u32string texto = livro.substr(0, 30000);
  const Tokenizer tok = Tokenizer::from_text(texto);
  const Split partes = split_train_val(tok.encode(texto), 0.9);

  // O modelo: o mesmo Decoder do projeto, menor.
  ModelConfig cfg;
  cfg.vocab_size = tok.vocab_size();
  cfg.d_model = 64;
  cfg.n_layers = 2;
  cfg.n_heads = 4;
  cfg.n_kv_heads = 2;
  cfg.ffn_hidden = 176;
  cfg.context_length = 32;
  cfg.ops_path = OpsPath::reference;  // os nove passos de nn/attention.cpp (glass train usa "fast")
  Decoder modelo(cfg, /*seed=*/21);

  tut::secao("O que vamos treinar");
  std::printf("caracteres de treino: %zu   de validação: %zu   vocabulário: %zu\n",
              partes.train.size(), partes.val.size(), tok.vocab_size());
  std::printf(
      "modelo: d_model %zu, %zu camadas, %zu cabeças (%zu K/V), contexto %zu, parâmetros %zu\n",
      cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.context_length,
      modelo.num_parameters());
  const long passos = 200;
  const std::size_t B = 16, T = cfg.context_length;
  std::printf("passos: %ld   lote: %zu janelas de %zu caracteres\n", passos, B, T);
  std::printf("log(V) = %.4f\n", std::log(double(tok.vocab_size())));

  BatchSampler lotes(partes.train, B, T, /*seed=*/22);
  AdamW otimizador(modelo.named_parameters());  // betas (0.9, 0.99), weight decay 0.1
  LrSchedule agenda;
  agenda.lr_max = 3e-3;
  agenda.min_lr = 3e-4;
  agenda.warmup = 20;
  agenda.decay_iters = passos;

  tut::secao("Treino");
  const double val_inicial = tut::perda_validacao(modelo, partes.val, T);
  std::printf("validação antes: %.4f\n", val_inicial);
  const auto inicio = std::chrono::steady_clock::now();
  Ids x, y;
  double primeira = 0, media_final = 0;
  long cortados = 0;             // passos em que a norma passou de 1 e o corte agiu
  double maior_depois_do_0 = 0;  // a maior norma depois do primeiro passo
  for (long it = 0; it < passos; ++it) {
    lotes.next(x, y);
    Tensor logits = modelo.forward(x);
    Tensor perda = cross_entropy(logits, y);
    otimizador.zero_grad();
    perda.backward();
    const double norma = clip_grad_norm(modelo.parameters(), 1.0);
    if (norma > 1.0) ++cortados;
    if (it > 0) maior_depois_do_0 = std::max(maior_depois_do_0, norma);
    otimizador.step(agenda.at(it));
    if (it == 0) primeira = perda.item();
    if (it >= passos - 20) media_final += perda.item() / 20;
    if (it % 40 == 0 || it == passos - 1) {
      std::printf("passo %3ld  lr %.5f  perda %.4f  norma do gradiente %.3f\n", it, agenda.at(it),
                  perda.item(), norma);
    }
  }
  const double segundos =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - inicio).count();
  std::printf("tempo: %.1f s (%.0f caracteres por segundo)\n", segundos, passos * B * T / segundos);
  std::printf(
      "passos em que o corte agiu (norma > 1): %ld de %ld; maior norma depois do passo 0: %.3f\n",
      cortados, passos, maior_depois_do_0);
  std::printf("perda inicial: %.4f\n", primeira);
  std::printf("perda final (média dos últimos 20 passos): %.4f\n", media_final);
  const double val_final = tut::perda_validacao(modelo, partes.val, T);
  std::printf("validação antes: %.4f   validação depois: %.4f\n", val_inicial, val_final);
  std::printf("validação final: %.4f\n", val_final);

  tut::secao("Contra o bigrama (capítulos 12 e 26)");
  const tut::PerdasBigrama bigrama =
      tut::perdas_bigrama(partes.train, partes.val, tok.vocab_size());
  std::printf("bigrama, perda mínima no treino: %.4f   bigrama na validação: %.4f\n",
              bigrama.otimo_treino, bigrama.validacao);
  std::printf("decoder na validação: %.4f (%s do melhor bigrama no treino)\n", val_final,
              val_final < bigrama.otimo_treino ? "abaixo" : "acima");
  tut::texto(
      "Em segundos, o Decoder já prevê o texto que nunca viu melhor do que a melhor tabela\n"
      "de bigramas prevê o próprio texto de onde foi contada: olhar para trás compensa.\n"
      "O modelo padrão (cerca de 750 mil parâmetros) treinado por alguns minutos com\n"
      "`glass train` vai bem mais longe. O capítulo 28 gera texto com um modelo assim.");

  tut::secao("O mesmo treino sem o corte");
  tut::texto(
      "Acima, a norma passou de 1 em muitos passos, e o corte agiu neles. O mesmo modelo, com\n"
      "as mesmas sementes e os mesmos lotes, treinado de novo com clip_grad_norm(..., 0)\n"
      "(max_norm 0 desliga o corte, mas ainda mede a norma):");
  Decoder sem_corte(cfg, /*seed=*/21);
  BatchSampler lotes2(partes.train, B, T, /*seed=*/22);
  AdamW otimizador2(sem_corte.named_parameters());
  double media_sem_corte = 0, maior_sem_corte = 0;
  for (long it = 0; it < passos; ++it) {
    lotes2.next(x, y);
    Tensor perda = cross_entropy(sem_corte.forward(x), y);
    otimizador2.zero_grad();
    perda.backward();
    maior_sem_corte = std::max(maior_sem_corte, clip_grad_norm(sem_corte.parameters(), 0.0));
    otimizador2.step(agenda.at(it));
    if (it >= passos - 20) media_sem_corte += perda.item() / 20;
  }
  const double val_sem_corte = tut::perda_validacao(sem_corte, partes.val, T);
  std::printf("com o corte: perda final %.4f   validação %.4f\n", media_final, val_final);
  std::printf("sem o corte: perda final %.4f   validação %.4f   maior norma %.3f\n",
              media_sem_corte, val_sem_corte, maior_sem_corte);
  tut::texto(
      "Com o AdamW e um lr pequeno, o corte muda pouco o resultado: o AdamW já divide cada\n"
      "passo por √v, e um gradiente grande num passo só não empurra muito. O corte é um seguro\n"
      "contra o lote ruim que faz a norma saltar, num treino longo e com lr maior; aqui ele\n"
      "age, mas muda pouco.\n"
      "Treino contra validação num treino longo (quando a validação para de cair e a distância\n"
      "cresce: o sobreajuste), e por que o GlassLLM não usa dropout: docs/sobreajuste-e-dropout.md.");

  tut::experimente({
      "aumente passos para 1000 e compare a validação (cuidado: treino e validação podem se afastar); mais rápido: 400 passos em só 3000 caracteres de treino mostram o mesmo afastamento;",
      "mude o max_norm do corte para 0.1: ele passa a agir em todo passo; se o fator do corte fosse o mesmo em todo passo, o AdamW nem perceberia (m/√v não muda quando todos os gradientes são multiplicados pelo mesmo número, salvo o eps) — compare a perda com as da seção 'O mesmo treino sem o corte';",
      "troque Dom Casmurro por data/corpora/tinyshakespeare.txt.",
  });

  tut::respostas();
  // 1) Overfitting, kept cheap: 400 steps on the first 3000 training ids only.
  const std::vector<std::int32_t> pouco(partes.train.begin(), partes.train.begin() + 3000);
  std::printf("1) 400 passos em só 3000 caracteres de treino (a validação é a mesma):\n");
  treinar(cfg, pouco, 400, 1.0, [&](long passo, const Decoder& m) {
    if (passo % 100 == 0) {
      std::printf("1) passo %3ld  treino %.4f  validação %.4f\n", passo,
                  tut::perda_validacao(m, pouco, T), tut::perda_validacao(m, partes.val, T));
    }
  });
  // 2) max_norm 0.1: the clipping acts at every step.
  const Treinado corte_01 = treinar(cfg, partes.train, passos, 0.1);
  std::printf("2) max_norm 0.1: perda final %.4f   validação %.4f   (com 1: %.4f, sem: %.4f)\n",
              corte_01.perda_final, tut::perda_validacao(*corte_01.modelo, partes.val, T),
              val_final, val_sem_corte);
  // 3) Tiny Shakespeare: the same model and steps on the start of another book.
  const std::u32string shakespeare =
      load_text(GLASS_SOURCE_DIR "/data/corpora/tinyshakespeare.txt").substr(0, 30000);
  const Tokenizer tok_en = Tokenizer::from_text(shakespeare);
  const Split partes_en = split_train_val(tok_en.encode(shakespeare), 0.9);
  ModelConfig cfg_en = cfg;
  cfg_en.vocab_size = tok_en.vocab_size();
  const Treinado en = treinar(cfg_en, partes_en.train, passos, 1.0);
  const tut::PerdasBigrama bigrama_en =
      tut::perdas_bigrama(partes_en.train, partes_en.val, tok_en.vocab_size());
  std::printf(
      "3) Tiny Shakespeare: vocabulário %zu   log(V) %.4f   validação depois: %.4f   "
      "bigrama na validação: %.4f\n",
      tok_en.vocab_size(), std::log(double(tok_en.vocab_size())),
      tut::perda_validacao(*en.modelo, partes_en.val, T), bigrama_en.validacao);
  tut::texto(
      "1) Com pouco texto, a perda no treino segue caindo e a validação para de cair e sobe:\n"
      "   o modelo decora os 3000 caracteres em vez de aprender a língua (o sobreajuste).\n"
      "2) O corte em 0.1 age em todo passo, com um fator que muda de passo a passo: o AdamW\n"
      "   não sente o fator, só a sua mudança (pelas médias m e v). Aqui a validação sai um\n"
      "   pouco melhor que as duas de cima; num só treino curto, uma diferença deste tamanho\n"
      "   não é regra.\n"
      "3) Outro livro, outra língua, o mesmo laço: a validação também fica abaixo da do\n"
      "   bigrama contado no mesmo treino.");
  return 0;
}
