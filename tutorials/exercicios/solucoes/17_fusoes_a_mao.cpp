// Solução do exercício 17 — Aplicar as fusões à mão (parte 6: capítulo 31).
//
// Um tokenizador BPE treinado é uma lista de fusões em ordem: a fusão número 0 é a mais
// antiga (a mais frequente no treino). Para codificar uma palavra, o GlassLLM faz como o
// llama.cpp e o run.c do llama2.c: parte dos caracteres e, enquanto houver um par de pedaços
// vizinhos cujo texto JUNTO é um token, junta o par cujo token tem o menor número (o maior
// score, score = -número); no empate, o par mais à esquerda. Escreva esse laço.
//
// Atenção a duas armadilhas: não é "o primeiro par da esquerda que dá um token", e não é
// "aplicar a lista de fusões em ordem, par a par": o que vale é o TEXTO do par juntado.
#include <map>
#include <string>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "exercicios/conferir.hpp"

// As fusões, em ordem (a de número 0 primeiro): cada uma junta dois pedaços num token.
static const std::vector<std::pair<std::string, std::string>> kFusoes = {
    {"q", "u"}, {"qu", "e"}, {"▁", "que"},  {"a", "s"}, {"▁", "c"}, {"▁c", "as"},
    {"s", "a"}, {"▁c", "a"}, {"▁ca", "sa"}, {"▁", "a"}, {"e", "s"}, {"e", "e"}};

// pedacos: os caracteres de uma palavra ("▁", "c", "a", "s", "a"); numero: o texto de cada
// token de fusão -> o número da fusão que o fez ("▁casa" -> 8). Devolve os pedaços finais.
static std::vector<std::string> aplicar_fusoes(std::vector<std::string> pedacos,
                                               const std::map<std::string, int>& numero) {
  // --- a sua parte ---
  while (true) {
    // O par vizinho cujo texto junto é o token de menor número; no empate, o mais à esquerda
    // (o '<' estrito guarda o primeiro).
    int melhor = -1;
    std::size_t onde = 0;
    for (std::size_t i = 0; i + 1 < pedacos.size(); ++i) {
      const auto it = numero.find(pedacos[i] + pedacos[i + 1]);
      if (it != numero.end() && (melhor < 0 || it->second < melhor)) {
        melhor = it->second;
        onde = i;
      }
    }
    if (melhor < 0) break;  // nenhum par vizinho é um token: acabou
    pedacos[onde] += pedacos[onde + 1];
    pedacos.erase(pedacos.begin() + static_cast<std::ptrdiff_t>(onde) + 1);
  }
  // --- fim ---
  return pedacos;
}

int main() {
  exercicio::titulo(17, "Aplicar as fusões à mão");
  std::map<std::string, int> numero;
  for (std::size_t n = 0; n < kFusoes.size(); ++n)
    numero[kFusoes[n].first + kFusoes[n].second] = static_cast<int>(n);

  // A referência da biblioteca: o mesmo vocabulário como BpeTokenizer (os caracteres, depois
  // as fusões por id), codificando com BpeTokenizer::encode.
  std::vector<char32_t> chars;
  for (const char* c : {"▁", "q", "u", "e", "a", "s", "c"})
    chars.push_back(glass::utf8_to_u32(c)[0]);
  std::map<std::string, std::int32_t> id;
  for (std::size_t i = 0; i < chars.size(); ++i)
    id[glass::char_to_utf8(chars[i])] =
        glass::BpeTokenizer::kFirstCharId + static_cast<std::int32_t>(i);
  std::vector<glass::BpeMerge> merges;
  for (const auto& [esq, dir] : kFusoes) {
    id[esq + dir] =
        glass::BpeTokenizer::kFirstCharId + static_cast<std::int32_t>(chars.size() + merges.size());
    merges.push_back({id.at(esq), id.at(dir)});
  }
  const glass::BpeTokenizer tok(chars, merges);

  // Os pedaços esperados, à mão:
  //   ▁casa: a+s (3) -> ▁ c as a; ▁+c (4) -> ▁c as a; ▁c+as (5) -> ▁cas a; "▁cas"+"a" =
  //          "▁casa" é o token da fusão 8 -> ▁casa (a lista em ordem pararia em ▁cas|a).
  //   ▁casas: a+s duas vezes (3), ▁+c (4), ▁c+as (5) -> ▁cas as ("▁casas" não é token).
  //   ▁asas: a+s (3) duas vezes -> ▁ as as (pela esquerda, ▁+a viria antes e daria ▁a sa s).
  //   ▁quase: q+u (0) -> ▁ qu a s e; a+s (3) -> ▁ qu as e ("que" não: o 'e' está longe).
  //   ▁cases: a+s, ▁+c, ▁c+as, e+s -> ▁cas es.
  //   ▁eee: e+e (11) em dois lugares, um empate: o da esquerda -> ▁ ee e.
  const std::vector<std::pair<std::string, std::vector<std::string>>> casos = {
      {"casa", {"▁casa"}},         {"casas", {"▁cas", "as"}},
      {"asas", {"▁", "as", "as"}}, {"quase", {"▁", "qu", "as", "e"}},
      {"cases", {"▁cas", "es"}},   {"eee", {"▁", "ee", "e"}}};
  bool certo = true;
  std::vector<double> tamanhos;
  for (const auto& [palavra, esperado] : casos) {
    std::vector<std::string> letras;
    for (char32_t c : glass::BpeTokenizer::normalize(glass::utf8_to_u32(palavra)))
      letras.push_back(glass::char_to_utf8(c));
    const std::vector<std::string> seus = aplicar_fusoes(letras, numero);
    std::vector<std::string> da_biblioteca;
    for (std::int32_t t : tok.encode(glass::utf8_to_u32(palavra)))
      da_biblioteca.push_back(tok.token_text(t));
    auto juntar = [](const std::vector<std::string>& v) {
      std::string r;
      for (const std::string& p : v) r += (r.empty() ? "" : "|") + p;
      return r;
    };
    std::printf("%s -> %s\n", palavra.c_str(), juntar(seus).c_str());
    if (seus != esperado || seus != da_biblioteca) {
      std::printf("  esperado: %s (a biblioteca: %s)\n", juntar(esperado).c_str(),
                  juntar(da_biblioteca).c_str());
      certo = false;
    }
    tamanhos.push_back(static_cast<double>(seus.size()));
  }
  tut::linha("resposta", tamanhos, 0);
  return exercicio::resultado(certo);
}
