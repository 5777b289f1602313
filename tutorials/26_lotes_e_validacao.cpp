// Capítulo 26 — Lotes, treino e validação: os dados do laço de treino.
#include <cmath>

#include "autograd/ops.hpp"
#include "bigrama.hpp"
#include "common.hpp"
#include "data/batches.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"
#include "nn/decoder.hpp"
#include "treino_rapido.hpp"

using namespace glass;

int main() {
  tut::capitulo(26, "Lotes, treino e validação");
  tut::novo(
      "janelas sorteadas (BatchSampler), x e y deslocados de um, a divisão treino/validação e as duas réguas: log(V) e o bigrama.");
  tut::texto(
      "No capítulo 12 o lote era o texto inteiro, e o modelo só via um caractere. O Decoder\n"
      "vê uma janela de T caracteres (o contexto) e prevê, em CADA posição, o caractere\n"
      "seguinte. Um lote são B janelas sorteadas do texto:\n"
      "  x = texto[i .. i+T-1]      y = texto[i+1 .. i+T]   (y é x deslocado de um)\n"
      "Antes disso, o texto é cortado em dois: os primeiros 90% para treinar e o resto para\n"
      "VALIDAR. O modelo nunca treina na validação; a perda nela diz se ele aprendeu algo\n"
      "que vale para texto novo ou se só decorou o de treino.");

  tut::secao("A divisão");
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::u32string texto = livro.substr(0, 30000);
  const Tokenizer tok = Tokenizer::from_text(texto);
  const Split partes = split_train_val(tok.encode(texto), 0.9);
  std::printf("caracteres: %zu   treino: %zu   validação: %zu   vocabulário: %zu\n", texto.size(),
              partes.train.size(), partes.val.size(), tok.vocab_size());
  tut::texto("O corte é por posição (sem embaralhar): a validação é o trecho final do texto.");

  tut::secao("Um lote: B = 2 janelas de T = 12 caracteres");
  BatchSampler lotes(partes.train, 2, 12, /*seed=*/25);
  Ids x, y;
  lotes.next(x, y);
  std::printf("x e y (B, T): %s\n", shape_str(shape_of(x)).c_str());
  for (std::size_t b = 0; b < 2; ++b) {
    std::vector<std::int32_t> linha_x(x.data() + b * 12, x.data() + (b + 1) * 12);
    std::vector<std::int32_t> linha_y(y.data() + b * 12, y.data() + (b + 1) * 12);
    std::string tx = tok.decode_utf8(linha_x), ty = tok.decode_utf8(linha_y);
    for (std::string* s : {&tx, &ty})
      for (char& c : *s)
        if (c == '\n') c = '|';
    std::printf("janela %zu   x: \"%s\"\n", b, tx.c_str());
    std::printf("           y: \"%s\"\n", ty.c_str());
  }
  tut::texto(
      "(| marca uma quebra de linha.) Cada janela dá T exemplos de uma vez: na posição t, o\n"
      "modelo vê x[0..t] e deve acertar y[t]. Com a máscara causal (capítulo 15), todas as\n"
      "posições são treinadas numa passada só.");

  tut::secao("Régua 1: um modelo que não sabe nada");
  const ModelConfig cfg = tut::config_pequena(tok.vocab_size());
  Decoder modelo(cfg, /*seed=*/21);
  const double val_inicial = tut::perda_validacao(modelo, partes.val, cfg.context_length);
  std::printf("validação de um Decoder recém-criado: %.4f   log(V) = %.4f\n", val_inicial,
              std::log(double(tok.vocab_size())));
  tut::texto(
      "Mesma coisa que o capítulo 09 previu: logits quase iguais, perda perto de log(V).\n"
      "A validação usa sempre as mesmas 8 janelas × 16 (semente fixa), sob NoGradGuard.");

  tut::secao("Régua 2: o melhor bigrama");
  const tut::PerdasBigrama bigrama =
      tut::perdas_bigrama(partes.train, partes.val, tok.vocab_size());
  std::printf("bigrama, perda mínima no treino (a conta do capítulo 12): %.4f\n",
              bigrama.otimo_treino);
  std::printf("bigrama, perda na validação (contagens + 1): %.4f\n", bigrama.validacao);
  tut::texto(
      "Um modelo que só olha o caractere atual não passa disso. O Decoder olha até 32\n"
      "caracteres para trás: no próximo capítulo, treinado por alguns segundos, ele tem\n"
      "que ficar abaixo dessas duas linhas na validação.");

  tut::experimente({
      "troque a fração 0.9 por 0.5: a validação fica maior e o treino menor;",
      "sorteie outro lote chamando lotes.next(x, y) de novo: as janelas mudam, y continua sendo x deslocado;",
      "calcule o bigrama com o livro inteiro (livro em vez de texto): as perdas mudam pouco ou muito?",
  });
  tut::respostas();
  {
    const Split metade = split_train_val(tok.encode(texto), 0.5);
    std::printf("fração 0.5: treino %zu, validação %zu\n", metade.train.size(), metade.val.size());
    Ids x2, y2;
    lotes.next(x2, y2);
    bool deslocado = true;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t + 1 < 12; ++t) deslocado = deslocado && y2(b, t) == x2(b, t + 1);
    std::vector<std::int32_t> outra(x2.data(), x2.data() + 12);
    std::string to = tok.decode_utf8(outra);
    for (char& c : to)
      if (c == '\n') c = '|';
    std::printf("outro lote, janela 0: \"%s\"; y é x deslocado de um: %s\n", to.c_str(),
                deslocado ? "sim" : "não");
    const Tokenizer tok_livro = Tokenizer::from_text(livro);
    const Split partes_livro = split_train_val(tok_livro.encode(livro), 0.9);
    const tut::PerdasBigrama livro_todo =
        tut::perdas_bigrama(partes_livro.train, partes_livro.val, tok_livro.vocab_size());
    std::printf("livro inteiro (V = %zu): bigrama, mínima no treino %.4f, validação %.4f\n",
                tok_livro.vocab_size(), livro_todo.otimo_treino, livro_todo.validacao);
    std::printf("  (com 30000 caracteres: %.4f e %.4f; mais texto aproxima as duas)\n",
                bigrama.otimo_treino, bigrama.validacao);
  }
  return 0;
}
