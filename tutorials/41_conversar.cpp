// Capítulo 41 — Conversar: o template de chat, a máscara da perda e o ajuste fino com e sem ela.
// (Lê-se depois do capítulo 27.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "common.hpp"
#include "data/chat_data.hpp"
#include "data/chat_template.hpp"
#include "data/text.hpp"
#include "data/text_tokenizer.hpp"
#include "sample/sampler.hpp"
#include "train/adamw.hpp"
#include "train/chat_base.hpp"
#include "train/chat_batches.hpp"
#include "train/clip.hpp"
#include "train/schedule.hpp"
#include "treino_rapido.hpp"

using namespace glass;

namespace {

constexpr std::size_t kContexto = 64;  // a janela do modelo: conversas de até 65 ids
constexpr long kPassosBase = 200;      // pré-treino em Dom Casmurro
constexpr long kPassosAjuste = 300;    // ajuste fino nas conversas
constexpr std::size_t kPorFamilia = 20;

// Os ids de <|im_start|> e <|im_end|>.
struct Marcas {
  std::int32_t inicio = 0, fim = 0;
};

// Um token como um glifo só, para alinhar com a máscara: « e » as marcas, ↵ a quebra de linha,
// ␣ o espaço.
std::string glifo(const TextTokenizer& tok, const Marcas& m, std::int32_t id) {
  if (id == m.inicio) return "«";
  if (id == m.fim) return "»";
  const std::string t = tok.token_text(id);
  if (t == "\n") return "↵";
  if (t == " ") return "␣";
  return t;
}

// Um texto gerado numa linha só: cada quebra de linha vira ↵.
std::string numa_linha(const std::string& texto) {
  std::string r;
  for (char c : texto) r += c == '\n' ? std::string("↵") : std::string(1, c);
  return r;
}

// As conversas de um arquivo de data/chat/ sem mensagem de sistema (para caberem na janela).
std::vector<Conversation> ler_conversas(const char* arquivo) {
  std::vector<Conversation> todas =
      read_chat_jsonl(std::string(GLASS_SOURCE_DIR "/data/chat/") + arquivo);
  std::vector<Conversation> sem_sistema;
  for (Conversation& c : todas)
    if (c.messages.front().role != ChatRole::kSystem) sem_sistema.push_back(std::move(c));
  return sem_sistema;
}

// As conversas renderizadas pelo template que cabem na janela (no máximo kContexto + 1 ids: a
// última só é prevista), e quais delas ficaram.
std::vector<ChatTokens> renderizar(const TextTokenizer& tok, std::vector<Conversation>& conversas) {
  std::vector<ChatTokens> r;
  std::vector<Conversation> cabem;
  for (Conversation& c : conversas) {
    ChatTokens t = render_chat(tok, c);
    if (t.ids.size() > kContexto + 1) continue;
    r.push_back(std::move(t));
    cabem.push_back(std::move(c));
  }
  conversas = std::move(cabem);
  return r;
}

// Os mesmos ids com outros alvos: `todos` = cada token é alvo (sem máscara); senão só os que o
// template deixou de fora das respostas (o complemento da máscara).
std::vector<ChatTokens> com_alvos(const std::vector<ChatTokens>& conversas, bool todos) {
  std::vector<ChatTokens> r = conversas;
  for (ChatTokens& t : r)
    for (std::size_t i = 0; i < t.ids.size(); ++i)
      t.labels[i] = todos || t.labels[i] == kIgnoreLabel ? t.ids[i] : kIgnoreLabel;
  return r;
}

// A perda média (nats por alvo) sobre todos os alvos contados de um conjunto, lote a lote.
double perda_media(const Decoder& modelo, const std::vector<ChatTokens>& conjunto,
                   std::int32_t pad) {
  NoGradGuard sem_fita;
  const ChatBatches linhas(conjunto, 32, kContexto, pad, 1, 1);
  double soma = 0;
  std::size_t contados = 0;
  Ids x, y;
  for (std::size_t i = 0; i < linhas.size(); i += 32) {
    linhas.rows_in_order(i, std::min<std::size_t>(32, linhas.size() - i), x, y);
    const std::size_t c =
        static_cast<std::size_t>(std::count_if(y.begin(), y.end(), [](auto v) { return v >= 0; }));
    soma += cross_entropy(modelo.forward(x), y).item() * static_cast<double>(c);
    contados += c;
  }
  return soma / static_cast<double>(contados);
}

// Ajuste fino: kPassosAjuste passos de AdamW (lotes de 16 conversas, clipping em 1, aquecimento
// e cosseno). Os lotes são sorteados com a mesma semente nas duas rodadas: as mesmas conversas,
// na mesma ordem; só os alvos mudam.
void ajustar(Decoder& modelo, const std::vector<ChatTokens>& treino, std::int32_t pad) {
  ChatBatches lotes(treino, 16, kContexto, pad, 7);
  AdamW otimizador(modelo.named_parameters());
  LrSchedule agenda;
  agenda.lr_max = 2e-3;
  agenda.min_lr = 2e-4;
  agenda.warmup = 20;
  agenda.decay_iters = kPassosAjuste;
  for (long it = 0; it < kPassosAjuste; ++it) {
    const Batch b = lotes.next_batch();
    const Ids x = to_id_array(b.x, b.batch_size, b.context);
    const Ids y = to_id_array(b.y, b.batch_size, b.context);
    Tensor perda = cross_entropy(modelo.forward(x), y);  // a média só sobre os alvos contados
    otimizador.zero_grad();
    perda.backward();
    clip_grad_norm(modelo.parameters(), 1.0);
    otimizador.step(agenda.at(it));
  }
}

// A resposta gulosa (temperatura 0) a um prompt, até `n` tokens; `terminou` diz se veio o
// <|im_end|>, e `depois` recebe os ids que o modelo escreve depois dele (sem parar).
std::vector<std::int32_t> responder(const Decoder& modelo, const std::vector<std::int32_t>& prompt,
                                    std::size_t n, const Marcas& m, bool& terminou,
                                    std::vector<std::int32_t>* depois = nullptr) {
  SamplingOptions guloso;
  guloso.temperature = 0;
  std::mt19937_64 rng(1);
  const std::size_t cabe = std::min(n, kContexto - prompt.size());
  const std::vector<std::int32_t> ids = generate(modelo, prompt, cabe, kContexto, guloso, rng);
  const auto fim = std::find(ids.begin(), ids.end(), m.fim);
  terminou = fim != ids.end();
  if (depois) depois->assign(terminou ? fim + 1 : ids.end(), ids.end());
  return std::vector<std::int32_t>(ids.begin(), fim);
}

// O prompt de uma conversa: as mensagens menos a resposta, e <|im_start|>assistant\n.
std::vector<std::int32_t> prompt_de(const TextTokenizer& tok, const Conversation& c) {
  return render_chat_prompt(tok, std::vector<ChatMessage>(c.messages.begin(), c.messages.end() - 1),
                            kContexto);
}

// Tem a forma de uma resposta da família: só dígitos (add, count), o comprimento da palavra
// certa (reverse), letras separadas por hífens (spell).
bool tem_a_forma(const std::string& familia, const std::u32string& r, const std::u32string& certa) {
  if (r.empty()) return false;
  if (familia == "add" || familia == "count")
    return std::all_of(r.begin(), r.end(), [](char32_t c) { return c >= U'0' && c <= U'9'; });
  if (familia == "reverse") return r.size() == certa.size();
  for (std::size_t i = 0; i < r.size(); ++i)
    if ((i % 2 == 1) != (r[i] == U'-')) return false;
  return r.size() % 2 == 1;
}

// O exame: por família, acertos exatos e respostas com a forma certa; quantas terminam com
// <|im_end|>, e quantas abrem, logo depois dele, outro turno (\n<|im_start|>), como no texto de
// treino sem a máscara.
struct Exame {
  std::map<std::string, int> acertos, forma;
  int total = 0, terminaram = 0, outro_turno = 0;
};

Exame examinar(const Decoder& modelo, const TextTokenizer& tok, const Marcas& m,
               const std::vector<Conversation>& exame) {
  Exame r;
  const std::int32_t quebra = tok.encode(U"\n").at(0);
  for (const Conversation& c : exame) {
    bool terminou = false;
    std::vector<std::int32_t> depois;
    const std::string resposta =
        tok.decode_generated(responder(modelo, prompt_de(tok, c), 24, m, terminou, &depois));
    const std::string& certa = c.messages.back().content;
    r.acertos[c.family] += resposta == certa;
    r.forma[c.family] += tem_a_forma(c.family, utf8_to_u32(resposta), utf8_to_u32(certa));
    r.terminaram += terminou;
    r.outro_turno += depois.size() >= 2 && depois[0] == quebra && depois[1] == m.inicio;
    ++r.total;
  }
  return r;
}

// As linhas de um exame. Começam com "~ ": 80 respostas gulosas de um modelo treinado aqui; numa
// outra CPU, um logit quase empatado pode trocar uma letra e mudar uma contagem em 1 ou 2.
void mostrar_exame(const char* quem, const Exame& e) {
  std::vector<double> a, f;
  for (const auto& [familia, n] : e.acertos) a.push_back(n);
  for (const auto& [familia, n] : e.forma) f.push_back(n);
  const std::string q = std::string("~ ") + quem;
  tut::linha(q + ", acertos add count reverse spell (de 20)", a, 0);
  tut::linha(q + ", forma certa add count reverse spell (de 20)", f, 0);
  tut::linha(q + ", terminam com <|im_end|>, abrem outro turno depois dele (de " +
                 std::to_string(e.total) + ")",
             std::vector<double>{double(e.terminaram), double(e.outro_turno)}, 0);
}

}  // namespace

int main() {
  tut::capitulo(41, "Conversar: o template de chat e a máscara da perda");
  tut::novo(
      "um modelo de chat é o modelo base mais dados: conversas escritas num template com tokens\n"
      "especiais (<|im_start|>, <|im_end|>), e um ajuste fino cuja perda conta só as respostas\n"
      "(a máscara); o mesmo ajuste com e sem a máscara, medido; o base e o ajustado nos mesmos\n"
      "prompts; o que ele ainda não sabe fazer.");
  tut::texto(
      "Lê-se depois do capítulo 27. O modelo do capítulo 27 continua texto: dado um começo, ele\n"
      "escreve o que viria depois num livro. Um assistente faz outra coisa: lê uma pergunta e\n"
      "responde, e PARA. Nada de arquitetura nova: o mesmo Decoder, treinado mais um pouco em\n"
      "conversas (o `glass finetune`). Este capítulo faz isso em segundos, num modelo pequeno.");

  // ---- o template ----
  tut::secao("O template (ChatML)");
  std::vector<Conversation> treino = ler_conversas("train.jsonl");
  std::vector<Conversation> validacao = ler_conversas("val.jsonl");
  std::vector<Conversation> exame = ler_conversas("exam.jsonl");
  tut::texto(
      "As conversas de data/chat/ (geradas pelo projeto a partir de Dom Casmurro: inverter uma\n"
      "palavra, contar uma letra, somar dois números, soletrar) são linhas JSONL no formato\n"
      "\"messages\" (role, content). Para o modelo, uma conversa vira UMA sequência de tokens no\n"
      "template ChatML, o que o llama.cpp reconhece:\n"
      "  <|im_start|>user\\n{pergunta}<|im_end|>\\n<|im_start|>assistant\\n{resposta}<|im_end|>\\n\n"
      "<|im_start|> e <|im_end|> são tokens especiais: cada um é UM id, acrescentado ao fim do\n"
      "vocabulário (data/text_tokenizer.hpp, with_chat_tokens), e o texto de uma mensagem nunca\n"
      "vira um deles.");

  // O modelo base: o capítulo 27 com uma janela de 64 caracteres.
  ModelConfig cfg = tut::config_pequena(0);
  cfg.context_length = kContexto;
  tut::ModeloPequeno base = tut::treinar_modelo(cfg, kPassosBase, 21);
  // A conversa que este capítulo mostra e a do Experimente, com as marcas digitadas como texto.
  Conversation exemplo, digitada;
  exemplo.messages = {{ChatRole::kUser, "inverta ovos"}, {ChatRole::kAssistant, "sovo"}};
  digitada.messages = {{ChatRole::kUser, "inverta <|im_end|> ovos"},
                       {ChatRole::kAssistant, "sovo"}};
  std::vector<Conversation> todas = {exemplo, digitada};
  todas.insert(todas.end(), treino.begin(), treino.end());
  todas.insert(todas.end(), validacao.begin(), validacao.end());
  todas.insert(todas.end(), exame.begin(), exame.end());
  const TextTokenizer tok_base(base.tokenizer);
  std::vector<char32_t> novos;
  const TextTokenizer tok = chat_tokenizer(tok_base, todas, &novos);
  const Marcas m{*tok.special_id(SpecialToken::kImStart), *tok.special_id(SpecialToken::kImEnd)};
  std::printf("vocabulário do base: %zu ids; do chat: %zu (mais %zu caracteres e 2 marcas)\n",
              tok_base.vocab_size(), tok.vocab_size(), novos.size());
  std::printf("caracteres que o livro não tinha:");
  for (char32_t c : novos) std::printf(" %s", char_to_utf8(c).c_str());
  std::printf("\n");
  tut::linha("ids de <|im_start|> e <|im_end|>",
             std::vector<double>{double(m.inicio), double(m.fim)}, 0);
  const std::vector<std::int32_t> digitado = tok.encode(U"<|im_start|>");
  std::printf(
      "o usuário digita \"<|im_start|>\": %zu ids, %s especial\n", digitado.size(),
      std::find(digitado.begin(), digitado.end(), m.inicio) == digitado.end() ? "nenhum" : "UM");
  tut::texto(
      "Os 12 caracteres digitados são 12 ids comuns: um usuário não consegue fingir o fim da\n"
      "própria fala nem abrir um turno do assistente escrevendo as marcas. Só quem monta o\n"
      "template (data/chat_template.cpp) põe os ids especiais, um a um.");

  // ---- a máscara ----
  tut::secao("A máscara da perda");
  const ChatTokens t = render_chat(tok, exemplo);
  std::string tokens, mascara;
  std::size_t contados = 0;
  for (std::size_t i = 0; i < t.ids.size(); ++i) {
    tokens += " " + glifo(tok, m, t.ids[i]);
    mascara += t.labels[i] == kIgnoreLabel ? " 0" : " 1";
    contados += t.labels[i] != kIgnoreLabel;
  }
  tut::texto(
      "No pré-treino, cada token é alvo: o modelo aprende a prever o texto inteiro. No ajuste\n"
      "fino de chat, só as respostas: a entropia cruzada (capítulo 09) pula as posições cujo\n"
      "alvo é -1 (o ignore_index). Uma conversa, token a token (« = <|im_start|>,\n"
      "» = <|im_end|>, ↵ = quebra de linha, ␣ = espaço), e a máscara: 1 = este token é um alvo\n"
      "(a perda conta a previsão dele, feita na posição anterior), 0 = não é:");
  std::printf("tokens: %s\n", tokens.c_str());
  std::printf("máscara:%s\n", mascara.c_str());
  tut::linha("alvos contados e tokens da conversa",
             std::vector<double>{double(contados), double(t.ids.size())}, 0);
  tut::texto(
      "Contam a resposta (s o v o) e o <|im_end|> que a fecha: o modelo aprende a PARAR. A\n"
      "pergunta, as marcas do template e o ↵ depois do » continuam na entrada (a atenção os lê\n"
      "como contexto), mas ninguém cobra do modelo que os adivinhe.");

  // ---- o experimento ----
  tut::secao("O experimento: o mesmo ajuste fino com e sem a máscara");
  const std::vector<ChatTokens> t_treino = renderizar(tok, treino);
  renderizar(tok, exame);  // só as que cabem na janela
  const std::vector<ChatTokens> t_val = renderizar(tok, validacao);
  std::vector<Conversation> prova;
  std::map<std::string, std::size_t> por_familia;
  for (const Conversation& c : exame)
    if (c.family != "identity" && por_familia[c.family]++ < kPorFamilia) prova.push_back(c);
  std::printf("conversas: %zu de treino, %zu de validação, %zu no exame (20 por família)\n",
              t_treino.size(), t_val.size(), prova.size());
  tut::texto(
      "As conversas sem mensagem de sistema que cabem em 64 caracteres. Três cópias do modelo\n"
      "base, com o vocabulário crescido para as marcas e os caracteres novos (train/chat_base.hpp:\n"
      "as linhas antigas bit a bit, as novas sorteadas): uma fica como está (o base), uma é\n"
      "ajustada COM a máscara, outra SEM (todo token é alvo, como no pré-treino). Os mesmos\n"
      "lotes, na mesma ordem, o mesmo lr; só os alvos mudam.");
  const std::int32_t pad = m.fim;
  std::unique_ptr<Decoder> modelo_base = grow_vocabulary(*base.modelo, tok_base, tok, 5);
  std::unique_ptr<Decoder> com = grow_vocabulary(*base.modelo, tok_base, tok, 5);
  std::unique_ptr<Decoder> sem = grow_vocabulary(*base.modelo, tok_base, tok, 5);
  std::printf("parâmetros do modelo: %zu\n", com->num_parameters());
  ajustar(*com, t_treino, pad);
  ajustar(*sem, com_alvos(t_treino, true), pad);

  const std::vector<ChatTokens> val_fora = com_alvos(t_val, false);
  const double r_base = perda_media(*modelo_base, t_val, pad);
  const double r_com = perda_media(*com, t_val, pad);
  const double r_sem = perda_media(*sem, t_val, pad);
  const double f_base = perda_media(*modelo_base, val_fora, pad);
  const double f_com = perda_media(*com, val_fora, pad);
  const double f_sem = perda_media(*sem, val_fora, pad);
  tut::texto(
      "A perda na validação (nats por alvo), separada em duas: nos tokens das respostas (os que a\n"
      "máscara conta) e em todos os outros (o template e as perguntas).");
  tut::linha("perda nas respostas: base, com máscara, sem máscara",
             std::vector<double>{r_base, r_com, r_sem}, 3);
  tut::linha("perda fora das respostas: base, com máscara, sem máscara",
             std::vector<double>{f_base, f_com, f_sem}, 3);
  std::printf("sem a máscara, a perda nas respostas fica acima da com a máscara: %s\n",
              r_sem > r_com ? "sim" : "não");
  std::printf("sem a máscara, a perda fora das respostas fica abaixo da com a máscara: %s\n",
              f_sem < f_com ? "sim" : "não");
  tut::texto(
      "Sem a máscara, o modelo gasta o ajuste aprendendo também o template e as perguntas (a\n"
      "perda fora das respostas despenca), e cada token de resposta pesa menos na média: com os\n"
      "mesmos passos, ele responde pior (a perda nas respostas fica acima). Com a máscara, a\n"
      "perda fora das respostas SOBE em relação ao base: ninguém pede ao modelo que preveja as\n"
      "perguntas, e ele desaprende um pouco o texto comum.");

  tut::texto(
      "Agora o exame: as perguntas de data/chat/exam.jsonl (palavras e somas que o treino nunca\n"
      "viu), respondidas de forma gulosa (temperatura 0) até o <|im_end|>, e a resposta comparada\n"
      "letra a letra com a certa. E, sem parar no <|im_end|>: o que o modelo escreve depois dele?");
  const Exame e_base = examinar(*modelo_base, tok, m, prova);
  const Exame e_com = examinar(*com, tok, m, prova);
  const Exame e_sem = examinar(*sem, tok, m, prova);
  mostrar_exame("base", e_base);
  mostrar_exame("com máscara", e_com);
  mostrar_exame("sem máscara", e_sem);
  std::printf("sem a máscara, abre outro turno depois do <|im_end|> mais vezes: %s\n",
              e_sem.outro_turno > e_com.outro_turno ? "sim" : "não");
  tut::texto(
      "As linhas com \"~ \" são respostas de um modelo treinado aqui: em outra CPU uma contagem\n"
      "pode mudar em 1 ou 2. O base (só Dom Casmurro) não conhece o template: repete palavras do\n"
      "livro e nunca escreve <|im_end|>. Os dois ajustados aprendem a forma de cada família e a\n"
      "parar. A diferença mais visível está DEPOIS do <|im_end|>: treinado sem a máscara, o\n"
      "modelo aprendeu também o que vem depois dele no texto de treino (\\n, <|im_start|>, outra\n"
      "fala) e, se ninguém o parar, continua a conversa sozinho, escrevendo os turnos seguintes.\n"
      "Com a máscara, o que vem depois do <|im_end|> nunca foi alvo: o modelo não sabe o que\n"
      "escrever ali (e não precisa: quem gera para no <|im_end|>).");
  std::vector<std::int32_t> depois;
  bool terminou = false;
  responder(*sem, prompt_de(tok, prova[0]), 40, m, terminou, &depois);
  std::printf("amostra: sem máscara, depois do <|im_end|>: \"%s\"\n",
              numa_linha(tok.decode_generated(depois)).c_str());
  responder(*com, prompt_de(tok, prova[0]), 40, m, terminou, &depois);
  std::printf("amostra: com máscara, depois do <|im_end|>: \"%s\"\n",
              numa_linha(tok.decode_generated(depois)).c_str());

  // ---- base contra ajustado ----
  tut::secao("O base e o ajustado nas mesmas perguntas");
  for (const char* familia : {"add", "count", "reverse", "spell"}) {
    const Conversation* c = nullptr;
    for (const Conversation& x : prova)
      if (x.family == familia) {
        c = &x;
        break;
      }
    std::printf("pergunta: %s (certa: %s)\n", c->messages[0].content.c_str(),
                c->messages.back().content.c_str());
    for (const auto& [quem, modelo] :
         {std::pair<const char*, const Decoder*>{"base", modelo_base.get()},
          {"com máscara", com.get()},
          {"sem máscara", sem.get()}}) {
      const std::string r =
          tok.decode_generated(responder(*modelo, prompt_de(tok, *c), 24, m, terminou));
      std::printf("amostra: %s: \"%s\"%s\n", quem, r.c_str(), terminou ? "" : " (sem <|im_end|>)");
    }
  }

  tut::secao("O que ele ainda não sabe fazer");
  tut::texto(
      "Acertar a forma não é acertar a conta. Contar uma letra, quando a resposta é quase sempre\n"
      "0, 1 ou 2, ele acerta metade das vezes; somar, inverter e soletrar, quase nunca: para\n"
      "copiar as letras da pergunta na ordem certa (ou de trás para frente) uma cabeça de\n"
      "atenção precisa achar a posição de cada letra (as cabeças de indução do capítulo 35), e a\n"
      "soma precisa do vai-um; 300 passos num modelo de cerca de 100 mil parâmetros não chegam\n"
      "lá. `bash scripts/chat.sh` faz o mesmo caminho com o modelo padrão e mais passos: a\n"
      "tabela do README (seção Chat) e docs/conversar.md têm o que ele alcança. E nenhum deles\n"
      "sabe coisas do mundo: o modelo só conhece Dom Casmurro e as quatro tarefas; o ajuste fino\n"
      "ensina o formato da conversa, não conhecimento novo.");

  tut::experimente({
      "digite \"<|im_end|>\" no meio da pergunta: quantos ids ela ganha, e a máscara muda?",
      "numa conversa de duas trocas (user, assistant, user, assistant), quantos alvos contam?",
  });
  tut::respostas();
  {
    const ChatTokens u = render_chat(tok, digitada);
    std::size_t alvos = 0;
    for (std::int32_t l : u.labels) alvos += l != kIgnoreLabel;
    std::printf("1) %zu tokens (eram %zu: +%zu, um por caractere de \"<|im_end|> \"); alvos: %zu\n",
                u.ids.size(), t.ids.size(), u.ids.size() - t.ids.size(), alvos);
    Conversation d;
    d.messages = {{ChatRole::kUser, "inverta ovos"},
                  {ChatRole::kAssistant, "sovo"},
                  {ChatRole::kUser, "e uva?"},
                  {ChatRole::kAssistant, "avu"}};
    const ChatTokens v = render_chat(tok, d);
    alvos = 0;
    for (std::int32_t l : v.labels) alvos += l != kIgnoreLabel;
    std::printf(
        "2) %zu alvos de %zu tokens: as duas respostas com o seu <|im_end|> (4 + 1 + 3 + 1)\n",
        alvos, v.ids.size());
  }
  return 0;
}
