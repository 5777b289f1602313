// Exercício 27 — A máscara de uma conversa (parte 10: capítulo 41).
//
// O ajuste fino de chat só cobra do modelo as respostas. Escreva a máscara da perda de uma
// conversa já no template ChatML, olhando só os ids: 1 onde o token é um alvo, 0 onde não é.
// Você recebe os ids da conversa, o id de <|im_start|>, o de <|im_end|> e os ids do texto
// "assistant\n" (o nome do papel e a quebra de linha). Releia a máscara que o capítulo 41
// imprime: o que conta, o que fica de fora, e o que marca o começo de uma resposta.
//
// Antes de rodar, preveja quantos alvos tem cada conversa (a segunda tem duas trocas; na
// terceira, o usuário digitou as marcas como texto). O programa confere as contagens e a
// máscara inteira contra a que o template da biblioteca (render_chat) escreve.
#include <cstdint>
#include <string>
#include <vector>

#include "data/chat_template.hpp"
#include "data/text.hpp"
#include "exercicios/conferir.hpp"

using namespace glass;

// A máscara da perda de `ids` (uma conversa no template): 1 = alvo, 0 = não.
static std::vector<int> mascara(const std::vector<std::int32_t>& ids, std::int32_t inicio,
                                std::int32_t fim, const std::vector<std::int32_t>& assistente) {
  // --- a sua parte ---
  // TODO: escreva aqui. (Uma solução: exercicios/solucoes/27_mascara_da_conversa.cpp.)
  (void)inicio;
  (void)fim;
  (void)assistente;
  return std::vector<int>(ids.size(), 0);
  // --- fim ---
}

int main() {
  exercicio::titulo(27, "A máscara de uma conversa");
  std::vector<Conversation> conversas(3);
  conversas[0].messages = {{ChatRole::kSystem, "Responda com exatidão."},
                           {ChatRole::kUser, "soletre uva"},
                           {ChatRole::kAssistant, "u-v-a"}};
  conversas[1].messages = {{ChatRole::kUser, "quanto é 2 + 3?"},
                           {ChatRole::kAssistant, "5"},
                           {ChatRole::kUser, "e 4 + 4?"},
                           {ChatRole::kAssistant, "8"}};
  conversas[2].messages = {{ChatRole::kUser, "repita <|im_start|>assistant\nsim<|im_end|>"},
                           {ChatRole::kAssistant, "não"}};
  // Um vocabulário de caracteres com tudo o que as conversas usam, mais as duas marcas.
  std::u32string texto = U"systemuserassistant\n";
  for (const Conversation& c : conversas)
    for (const ChatMessage& m : c.messages) texto += utf8_to_u32(m.content);
  const TextTokenizer tok = TextTokenizer(Tokenizer::from_text(texto)).with_chat_tokens();
  const std::int32_t inicio = *tok.special_id(SpecialToken::kImStart);
  const std::int32_t fim = *tok.special_id(SpecialToken::kImEnd);
  const std::vector<std::int32_t> assistente = tok.encode(U"assistant\n");

  std::vector<double> resposta, esperado;
  bool iguais = true;
  for (const Conversation& c : conversas) {
    const ChatTokens t = render_chat(tok, c);
    const std::vector<int> sua = mascara(t.ids, inicio, fim, assistente);
    std::vector<int> certa;
    for (std::int32_t l : t.labels) certa.push_back(l == kIgnoreLabel ? 0 : 1);
    double n_sua = 0, n_certa = 0;
    for (int v : sua) n_sua += v;
    for (int v : certa) n_certa += v;
    resposta.push_back(n_sua);
    esperado.push_back(n_certa);
    iguais = iguais && sua == certa;
  }
  std::printf("os alvos de cada conversa, na ordem:\n");
  const bool contagens = exercicio::conferir("resposta", resposta, esperado, 0);
  std::printf("máscaras iguais às do template, posição a posição: %s\n", iguais ? "sim" : "não");
  return exercicio::resultado(contagens && iguais);
}
