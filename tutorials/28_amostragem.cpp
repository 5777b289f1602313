// Capítulo 28 — Amostragem: temperatura, top-k e top-p.
#include <random>

#include "common.hpp"
#include "sample/sampler.hpp"
#include "treino_rapido.hpp"

using namespace glass;

using tut::ModeloPequeno;

static void mostrar(const char* rotulo, const std::vector<double>& p) { tut::linha(rotulo, p); }

int main() {
  tut::capitulo(28, "Amostragem: temperatura, top-k, top-p");
  tut::novo(
      "escolher o próximo caractere a partir dos logits (sample/sampler.hpp) e gerar texto com generate().");
  tut::texto(
      "O modelo dá logits para o próximo caractere; softmax vira probabilidades. Sortear\n"
      "sempre o mais provável (guloso) dá texto repetitivo; sortear da distribuição\n"
      "inteira às vezes escolhe absurdos raros. Três botões, nesta ordem:\n"
      "  temperatura T: divide os logits por T antes do softmax (T < 1 concentra, T > 1 espalha;\n"
      "                 T = 0 é o guloso);\n"
      "  top-k: fica só com os k maiores logits (empates com o k-ésimo ficam todos);\n"
      "  top-p (núcleo, Holtzman et al. 2020): fica com os mais prováveis até a soma\n"
      "         alcançar p, e renormaliza.");

  tut::secao("Cinco candidatos: 'a' 'e' 'o' 's' ' ', logits [2, 1.5, 1, 0, -1]");
  const std::vector<double> logits = {2.0, 1.5, 1.0, 0.0, -1.0};
  SamplingOptions o;
  o.temperature = 1;
  mostrar("temperatura 1", next_token_probs(logits, o));
  o.temperature = 0.5;
  mostrar("temperatura 0.5", next_token_probs(logits, o));
  o.temperature = 2;
  mostrar("temperatura 2", next_token_probs(logits, o));
  o.temperature = 0;
  mostrar("temperatura 0", next_token_probs(logits, o));
  o.temperature = 1;
  o.top_k = 2;
  mostrar("top-k 2", next_token_probs(logits, o));
  o.top_k = 0;
  o.top_p = 0.8;
  mostrar("top-p 0.8", next_token_probs(logits, o));
  tut::texto(
      "Com temperatura 1: 0.463 0.281 0.170 0.063 0.023. O top-p 0.8 fica com 'a' 'e' 'o':\n"
      "0.463 + 0.281 = 0.744 ainda não chega a 0.8; com 'o', 0.914. Depois renormaliza.");

  tut::secao("Sorteando 10000 vezes com temperatura 1 (semente 22)");
  std::mt19937_64 rng(22);
  o = SamplingOptions{};
  o.temperature = 1;
  const std::vector<double> p = next_token_probs(logits, o);
  std::vector<double> contagem(5, 0);
  for (int i = 0; i < 10000; ++i) contagem[draw(p, rng)] += 1;
  for (double& c : contagem) c /= 10000;
  mostrar("frequências", contagem);
  tut::texto("Perto das probabilidades, como deve ser. A mesma semente dá os mesmos sorteios.");

  tut::secao("Num modelo treinado agora mesmo (a configuração do capítulo 27, em segundos)");
  tut::texto(
      "generate(modelo, prompt, n, janela, opções, rng) repete n vezes: passa os últimos\n"
      "`janela` ids pelo modelo, pega os logits da ÚLTIMA posição, aplica temperatura,\n"
      "top-k e top-p (next_token_probs), sorteia um id (draw) e o acrescenta ao texto.\n"
      "Devolve só os ids novos. (O cache de K/V que ele usa é o capítulo 29.)");
  ModeloPequeno m = tut::treinar_rapido();
  const auto prompt = m.tokenizer.encode(U"Capitu");
  auto gerar = [&](const char* rotulo, SamplingOptions opcoes) {
    std::mt19937_64 semente(22);
    const auto novos =
        generate(*m.modelo, prompt, 80, m.modelo->config().context_length, opcoes, semente);
    std::string texto = m.tokenizer.decode_utf8(novos);
    for (char& c : texto)
      if (c == '\n') c = ' ';
    std::printf("%-18s Capitu%s\n", rotulo, texto.c_str());
  };
  SamplingOptions g;
  g.temperature = 0;
  gerar("guloso (T = 0):", g);
  g.temperature = 0.5;
  gerar("T = 0.5:", g);
  g.temperature = 1.0;
  gerar("T = 1:", g);
  g.temperature = 1.5;
  gerar("T = 1.5:", g);
  g.temperature = 1.0;
  g.top_k = 5;
  gerar("T = 1, top-k 5:", g);
  g.top_k = 0;
  g.top_p = 0.9;
  gerar("T = 1, top-p 0.9:", g);
  tut::texto(
      "O guloso tende a repetir; temperaturas altas inventam demais; top-k e top-p\n"
      "cortam a cauda de candidatos improváveis.");

  tut::experimente({
      "troque a semente: o guloso não muda, os outros mudam;",
      "use top_k = 1 com temperatura 1: o texto fica igual ao guloso (só sobra o maior logit);",
      "no programa: glass sample --checkpoint DIR --temperature 0.5 --top-k 10 (DIR de um glass train).",
  });
  tut::respostas();
  {
    const auto texto_de = [&](SamplingOptions opcoes, unsigned semente) {
      std::mt19937_64 rng(semente);
      return m.tokenizer.decode_utf8(
          generate(*m.modelo, prompt, 80, m.modelo->config().context_length, opcoes, rng));
    };
    SamplingOptions guloso, t1, k1;
    guloso.temperature = 0;
    t1.temperature = 1.0;
    k1.temperature = 1.0;
    k1.top_k = 1;
    std::printf("semente 22 contra 99, guloso: textos iguais? %s\n",
                texto_de(guloso, 22) == texto_de(guloso, 99) ? "sim" : "não");
    std::printf("semente 22 contra 99, T = 1: textos iguais? %s\n",
                texto_de(t1, 22) == texto_de(t1, 99) ? "sim" : "não");
    std::printf("top-k 1 com T = 1 igual ao guloso? %s\n",
                texto_de(k1, 22) == texto_de(guloso, 22) ? "sim" : "não");
  }
  return 0;
}
