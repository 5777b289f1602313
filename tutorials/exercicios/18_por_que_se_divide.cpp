// Exercício 18 — Por que esta palavra se divide assim? (parte 6: capítulo 31).
//
// O vocabulário abaixo tem o token "▁casa" (a fusão 4, ▁ca + sa). Mesmo assim, com as
// fusões 0 a 4, a palavra "casa" NÃO vira um token só: BpeTokenizer::encode dá ▁c|as|a.
// Faça a conta no papel (o codificador junta sempre o par vizinho cujo texto junto é o token
// de menor número) e descubra por quê.
//
// Depois escreva `menor_vocabulario`: o menor tamanho de vocabulário com que a palavra vira
// UM token, usando só as primeiras k fusões do tokenizador (k = 0, 1, 2, ...); -1 se nenhum.
// Um vocabulário com as k primeiras fusões tem BpeTokenizer::kFirstCharId + caracteres + k
// tokens, e se monta com o construtor BpeTokenizer(chars, merges).
//
// Cuidado: "o id do token '▁casa' + 1" parece a resposta, mas ter o token não basta.
#include <string>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "exercicios/conferir.hpp"

using glass::BpeTokenizer;

// palavra sem o '▁' ("casa"); encode acrescenta o '▁' do começo.
static long menor_vocabulario(const BpeTokenizer& tok, const std::u32string& palavra) {
  // --- a sua parte ---
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/18_por_que_se_divide.cpp.)
  (void)tok;
  (void)palavra;
  // --- fim ---
  return 0;
}

int main() {
  exercicio::titulo(18, "Por que esta palavra se divide assim?");
  // Os caracteres ▁ c a s têm os ids 259 a 262; a fusão n faz o id 263 + n.
  std::vector<char32_t> chars;
  for (const char* c : {"▁", "c", "a", "s"}) chars.push_back(glass::utf8_to_u32(c)[0]);
  const std::int32_t ESPACO = 259, C = 260, A = 261, S = 262;
  const std::vector<glass::BpeMerge> merges = {
      {A, S},       // 0: as    (263)
      {ESPACO, C},  // 1: ▁c    (264)
      {264, A},     // 2: ▁ca   (265)
      {S, A},       // 3: sa    (266)
      {265, 266},   // 4: ▁casa (267)
      {264, 263},   // 5: ▁cas  (268)
  };
  const BpeTokenizer tok(chars, merges);
  const BpeTokenizer sem_a_ultima(chars, {merges.begin(), merges.end() - 1});
  std::printf("casa com as fusões 0 a 4:");
  for (std::int32_t id : sem_a_ultima.encode(U"casa"))
    std::printf(" %s", sem_a_ultima.token_text(id).c_str());
  std::printf("   (e o token ▁casa existe: id %d)\n", sem_a_ultima.id_of_text(U"▁casa"));
  for (const char* palavra : {"casa", "ca", "sa"}) {
    std::printf("%s com as fusões 0 a %zu:", palavra, merges.size() - 1);
    for (std::int32_t id : tok.encode(glass::utf8_to_u32(palavra)))
      std::printf(" %s", tok.token_text(id).c_str());
    std::printf("\n");
  }
  // Faça a conta à mão antes de rodar: com quais fusões cada palavra chega a um token só?
  // (O raciocínio passo a passo está na solução.)
  const std::vector<double> resposta = {static_cast<double>(menor_vocabulario(tok, U"casa")),
                                        static_cast<double>(menor_vocabulario(tok, U"ca")),
                                        static_cast<double>(menor_vocabulario(tok, U"sa"))};
  const bool certo = exercicio::conferir("resposta", resposta, {269, 266, -1}, 0);
  return exercicio::resultado(certo);
}
