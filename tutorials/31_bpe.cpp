// Capítulo 31 — BPE: tokens de subpalavras, como os do LLaMA.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"

using namespace glass;

namespace {

const std::u32string kMarca(1, BpeTokenizer::kSpaceMark);  // '▁'

// ---- BPE à mão: palavras como listas de símbolos ---------------------------------------------

/// Os símbolos (textos) e os seus ids, na ordem da biblioteca: os caracteres do texto, o mais
/// frequente primeiro (empate: menor ponto de código), depois um id novo por fusão.
struct Simbolos {
  std::vector<std::u32string> texto;  // texto[id]
  std::map<std::u32string, int> id;   // texto -> id
  int novo(const std::u32string& t) {
    id[t] = static_cast<int>(texto.size());
    texto.push_back(t);
    return id[t];
  }
};

using Palavra = std::vector<int>;  // ids dos símbolos de uma palavra

std::string utf8(const std::u32string& s) { return u32_to_utf8(s); }

/// As palavras separadas por espaço, cada uma em símbolos: "▁" + palavra, letra por letra.
std::string mostrar(const std::vector<Palavra>& palavras, const Simbolos& s) {
  std::string r;
  for (const Palavra& p : palavras) {
    if (!r.empty()) r += "  ";
    for (std::size_t i = 0; i < p.size(); ++i) r += (i ? "|" : "") + utf8(s.texto[p[i]]);
  }
  return r;
}

std::size_t contar_tokens(const std::vector<Palavra>& palavras) {
  std::size_t n = 0;
  for (const Palavra& p : palavras) n += p.size();
  return n;
}

/// A entropia (nats) da distribuição das contagens: a perda média do melhor modelo de
/// unigramas medida no próprio texto.
double entropia(const std::map<std::int64_t, double>& contagens, double total) {
  double h = 0;
  for (const auto& [chave, n] : contagens) h -= n / total * std::log(n / total);
  return h;
}

}  // namespace

int main() {
  tut::capitulo(31, "BPE: tokens de subpalavras, como os do LLaMA");
  tut::novo("o tokenizador BPE: pares frequentes viram tokens; byte fallback; bits por byte.");
  tut::texto(
      "Até aqui, um token era um caractere. Os LLMs de verdade (LLaMA, GPT) leem pedaços de\n"
      "palavras: 'que', '▁de', 'mente'. O BPE (byte pair encoding) aprende esses pedaços de um\n"
      "texto com uma regra só: conte os pares de símbolos vizinhos, junte o par mais frequente\n"
      "num símbolo novo, repita. Cada junção (fusão) acrescenta um token ao vocabulário.\n"
      "Seguimos as convenções do SentencePiece do LLaMA: o espaço vira '▁' e um '▁' vai antes\n"
      "do texto, então cada palavra começa com '▁'; e uma fusão nunca atravessa um '▁' (só pode\n"
      "começar com ele), então os tokens nunca juntam duas palavras. Veja docs/bpe.md.");

  // ---------------------------------------------------------------------------------------------
  tut::secao("BPE à mão num texto minúsculo");
  const std::u32string frase = utf8_to_u32("o rato roeu a roupa do rei de roma");
  const std::u32string normal = BpeTokenizer::normalize(frase);
  std::printf("texto: %s\nnormalizado: %s\n", utf8(frase).c_str(), utf8(normal).c_str());

  // Os caracteres, o mais frequente primeiro: os ids do desempate.
  std::map<char32_t, int> freq;
  for (char32_t c : normal) ++freq[c];
  std::vector<char32_t> letras;
  for (const auto& [c, n] : freq) letras.push_back(c);
  std::stable_sort(letras.begin(), letras.end(),
                   [&](char32_t a, char32_t b) { return freq[a] > freq[b]; });
  Simbolos s;
  for (char32_t c : letras) s.novo(std::u32string(1, c));

  std::vector<Palavra> palavras;
  for (char32_t c : normal) {
    if (c == BpeTokenizer::kSpaceMark) palavras.emplace_back();
    palavras.back().push_back(s.id.at(std::u32string(1, c)));
  }
  std::printf("símbolos: %s\n", mostrar(palavras, s).c_str());
  std::printf("tokens no início: %zu\n", contar_tokens(palavras));
  tut::texto(
      "Regras (as da biblioteca): contam-se os pares dentro de cada palavra (um par cujo\n"
      "segundo símbolo começa com '▁' atravessaria palavras: não conta). Empate: ganha o par\n"
      "cujo primeiro símbolo tem o menor id (os caracteres mais frequentes têm ids menores),\n"
      "depois o segundo.");

  const int passos = 3;
  std::vector<std::pair<std::u32string, std::u32string>> minhas_fusoes;
  for (int passo = 1; passo <= passos; ++passo) {
    std::map<std::pair<int, int>, int> pares;  // (esquerda, direita) -> contagem
    for (const Palavra& p : palavras)
      for (std::size_t i = 0; i + 1 < p.size(); ++i) ++pares[{p[i], p[i + 1]}];
    std::vector<std::pair<std::pair<int, int>, int>> ordem(pares.begin(), pares.end());
    // A mais frequente primeiro; empate pela ordem do map: menor id à esquerda, depois à direita.
    std::stable_sort(ordem.begin(), ordem.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::printf("\npasso %d, pares mais frequentes:", passo);
    for (std::size_t i = 0; i < ordem.size() && i < 6; ++i) {
      const auto [esq, dir] = ordem[i].first;
      std::printf("%s %s+%s %d", i ? "," : "", utf8(s.texto[esq]).c_str(),
                  utf8(s.texto[dir]).c_str(), ordem[i].second);
    }
    std::printf("\n");
    const auto [esq, dir] = ordem[0].first;
    const int novo = s.novo(s.texto[esq] + s.texto[dir]);
    minhas_fusoes.emplace_back(s.texto[esq], s.texto[dir]);
    std::printf("passo %d, junta: %s + %s -> %s (%d vezes)\n", passo, utf8(s.texto[esq]).c_str(),
                utf8(s.texto[dir]).c_str(), utf8(s.texto[novo]).c_str(), ordem[0].second);
    for (Palavra& p : palavras) {  // da esquerda para a direita, sem sobreposição
      Palavra q;
      for (std::size_t i = 0; i < p.size();) {
        if (i + 1 < p.size() && p[i] == esq && p[i + 1] == dir) {
          q.push_back(novo);
          i += 2;
        } else {
          q.push_back(p[i++]);
        }
      }
      p = q;
    }
    std::printf("passo %d, texto: %s\n", passo, mostrar(palavras, s).c_str());
    std::printf("tokens depois do passo %d: %zu\n", passo, contar_tokens(palavras));
  }
  std::map<std::pair<int, int>, int> restantes;
  int maior = 0;
  for (const Palavra& p : palavras)
    for (std::size_t i = 0; i + 1 < p.size(); ++i)
      maior = std::max(maior, ++restantes[{p[i], p[i + 1]}]);
  std::printf("\nmaior contagem de um par depois do passo %d: %d\n", passos, maior);
  tut::texto(
      "Daqui em diante todo par aparece uma vez só: o desempate decide, e cada fusão encurta\n"
      "o texto em um token. Num texto grande os pares frequentes são sílabas e palavras comuns.");

  // A biblioteca, com o mesmo número de fusões: 259 ids reservados + os caracteres + 3.
  const BpeTokenizer mini =
      BpeTokenizer::train(frase, BpeTokenizer::kFirstCharId + letras.size() + passos);
  std::printf("\nfusões da biblioteca:");
  bool iguais = mini.merges().size() == minhas_fusoes.size();
  for (std::size_t r = 0; r < mini.merges().size(); ++r) {
    const BpeMerge& m = mini.merges()[r];
    std::printf(" %s+%s", mini.token_text(m.left).c_str(), mini.token_text(m.right).c_str());
    iguais = iguais && r < minhas_fusoes.size() &&
             mini.token_text32(m.left) == minhas_fusoes[r].first &&
             mini.token_text32(m.right) == minhas_fusoes[r].second;
  }
  std::printf("\nas mesmas fusões que à mão: %s\n", iguais ? "sim" : "NÃO");
  std::printf(
      "tamanho do vocabulário: %zu = 3 especiais + 256 bytes + %zu caracteres + %zu fusões\n",
      mini.vocab_size(), mini.chars().size(), mini.merges().size());
  std::printf("tokens do texto pela biblioteca: %zu\n", mini.encode(frase).size());

  // ---------------------------------------------------------------------------------------------
  tut::secao("O treino de verdade: Dom Casmurro");
  TextInfo info;
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt", &info);
  std::printf("caracteres: %zu   bytes: %zu\n", livro.size(), info.bytes);
  const std::vector<std::size_t> tamanhos = {384, 512, 1024, 2048};
  std::vector<BpeTokenizer> toks;
  std::vector<std::size_t> n_tokens;
  for (std::size_t v : tamanhos) {
    toks.push_back(BpeTokenizer::train(livro, v));
    n_tokens.push_back(toks.back().encode_compact(livro).size());
  }
  std::printf("vocabulário mínimo: %zu (259 + %zu caracteres, '▁' no lugar do espaço)\n",
              BpeTokenizer::kFirstCharId + toks[0].chars().size(), toks[0].chars().size());
  tut::texto("Quantos tokens o livro inteiro vira, para cada tamanho de vocabulário:");
  for (std::size_t i = 0; i < tamanhos.size(); ++i) {
    std::printf("tokens com vocabulário %zu: %zu   fusões: %zu   caracteres por token: %.3f\n",
                tamanhos[i], n_tokens[i], toks[i].merges().size(),
                static_cast<double>(livro.size()) / n_tokens[i]);
  }
  std::printf("de 1024 para 2048 tokens, o texto encolhe: %.1f%%\n",
              100.0 * (1.0 - static_cast<double>(n_tokens[3]) / n_tokens[2]));
  tut::texto(
      "Com 384 há só poucas dezenas de fusões. Dobrar o vocabulário de 1024 para 2048 acrescenta\n"
      "mais de mil fusões e encurta o texto bem menos do que as primeiras 683: as fusões novas\n"
      "são pares cada vez mais raros.");

  const BpeTokenizer& grande = toks.back();
  std::printf("\nprimeiras fusões:");
  for (std::size_t r = 0; r < 24; ++r) {
    const BpeMerge& m = grande.merges()[r];
    std::printf(" %s+%s", grande.token_text(m.left).c_str(), grande.token_text(m.right).c_str());
  }
  std::printf("\n");
  // O vocabulário menor é o começo do maior: o treino é o mesmo até a fusão 384 - 341.
  bool prefixo = true;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i)
    prefixo = prefixo &&
              std::equal(toks[i].merges().begin(), toks[i].merges().end(), grande.merges().begin());
  std::printf("as fusões de cada vocabulário são o começo das do maior: %s\n",
              prefixo ? "sim" : "NÃO");
  for (const char* t : {"▁de", "▁que", "que", "mente", "▁Capitu"}) {
    const std::int32_t id = grande.id_of_text(utf8_to_u32(t));
    if (id < 0) {
      std::printf("token %s: não existe com 2048\n", t);
    } else {
      std::printf("token %s: id %d, fusão número %d\n", t, id, id - grande.first_merge_id() + 1);
    }
  }
  tut::texto(
      "As primeiras fusões são pedaços do português: '▁' + letra (o começo das palavras mais\n"
      "comuns: a, de, e, que), 'qu', 'os', 'as', 'es'. '▁de' e '▁que' viram tokens inteiros logo.");

  // ---------------------------------------------------------------------------------------------
  tut::secao("Como as palavras se dividem (vocabulário 1024)");
  const BpeTokenizer& medio = toks[2];
  for (const char* palavra :
       {"que", "Capitu", "Bentinho", "olhos", "ressaca", "inconstitucionalissimamente"}) {
    const std::vector<std::int32_t> ids = medio.encode(utf8_to_u32(palavra));
    std::printf("pedaços de %s:", palavra);
    for (std::int32_t id : ids) {
      if (id >= medio.first_merge_id()) {
        std::printf(" %s(fusão %d)", medio.token_text(id).c_str(), id - medio.first_merge_id() + 1);
      } else {
        std::printf(" %s(caractere)", medio.token_text(id).c_str());
      }
    }
    std::printf("   tokens: %zu\n", ids.size());
  }
  tut::texto(
      "Por quê? O codificador parte das letras e junta sempre o par vizinho cujo texto é o\n"
      "token da fusão mais antiga (a de menor número: o score da fusão n é -(n - 1), e ganha o\n"
      "maior score), até que nenhum par vizinho seja um token. 'que' aparece milhares de vezes no livro: virou um token só.\n"
      "Uma palavra rara nunca foi par frequente: fica nos pedaços comuns que a compõem\n"
      "(prefixos, sílabas, o sufixo 'mente'). É por isso que um LLM tem dificuldade de soletrar:\n"
      "ele não vê as letras de '▁que', vê um id.");

  // ---------------------------------------------------------------------------------------------
  tut::secao("Um caractere fora do vocabulário: byte fallback");
  const std::u32string emoji = utf8_to_u32("Capitu 🙂");
  const std::vector<std::int32_t> ids_emoji = medio.encode(emoji);
  std::printf("texto: %s   bytes do emoji:", utf8(emoji).c_str());
  for (unsigned char b : char_to_utf8(emoji.back())) std::printf(" 0x%02X", b);
  std::printf("\nids:");
  for (std::int32_t id : ids_emoji) std::printf(" %d", id);
  std::printf("\ntokens:");
  for (std::int32_t id : ids_emoji) std::printf(" %s", medio.token_text(id).c_str());
  std::printf("\nde volta: %s\n", medio.decode_utf8(ids_emoji).c_str());
  tut::texto(
      "O emoji não está entre os caracteres do livro. Em vez de um id 'desconhecido', ele vira\n"
      "os tokens dos seus 4 bytes UTF-8: o byte b tem o id b + 3 (ids 3 a 258, como no\n"
      "llama2.c). Nenhum texto fica sem tokens, e a decodificação remonta o caractere.");

  // ---------------------------------------------------------------------------------------------
  tut::secao("Um contexto de 64 tokens não é de 64 caracteres");
  const std::vector<std::int32_t> todos = medio.encode(livro);
  const std::vector<std::int32_t> janela(todos.begin() + 20000, todos.begin() + 20064);
  const std::u32string pedaco = medio.decode(janela, /*drop_dummy_prefix=*/false);
  std::printf("64 tokens a partir do token 20000: %zu caracteres\n", pedaco.size());
  std::printf("texto: %s\n", utf8(pedaco).c_str());
  for (std::size_t i = 0; i < tamanhos.size(); ++i) {
    std::printf("64 tokens com vocabulário %zu cobrem em média: %.1f caracteres\n", tamanhos[i],
                64.0 * livro.size() / n_tokens[i]);
  }
  tut::texto(
      "O modelo vê context_length tokens. Com BPE, a mesma janela cobre mais texto: a conta\n"
      "da atenção e o cache de K/V contam tokens, não caracteres.");

  // ---------------------------------------------------------------------------------------------
  tut::secao("A perda por token não se compara entre tokenizadores");
  // O melhor modelo de unigramas (a frequência de cada token), medido no próprio livro: a sua
  // perda média é a entropia da distribuição dos tokens.
  std::map<std::int64_t, double> por_caractere, por_token;
  for (char32_t c : livro) ++por_caractere[c];
  for (std::int32_t id : todos) ++por_token[id];
  const double h_car = entropia(por_caractere, static_cast<double>(livro.size()));
  const double h_tok = entropia(por_token, static_cast<double>(todos.size()));
  const double bytes = static_cast<double>(info.bytes);
  const double bpb_car = h_car * static_cast<double>(livro.size()) / (bytes * std::log(2.0));
  const double bpb_tok = h_tok * static_cast<double>(todos.size()) / (bytes * std::log(2.0));
  std::printf(
      "unigramas de caracteres: perda %.4f nats por token, %zu tokens, %.4f bits por byte\n", h_car,
      livro.size(), bpb_car);
  std::printf("unigramas de BPE 1024: perda %.4f nats por token, %zu tokens, %.4f bits por byte\n",
              h_tok, todos.size(), bpb_tok);
  std::printf("por token, a menor perda: %s\npor byte, a menor perda: %s\n",
              h_tok < h_car ? "BPE" : "caracteres", bpb_tok < bpb_car ? "BPE" : "caracteres");
  tut::texto(
      "(O melhor modelo de unigramas de cada um, medido no próprio livro: a perda é a entropia\n"
      "das frequências.) Por token, o BPE parece pior: cada token carrega mais texto e é mais\n"
      "difícil de adivinhar. Mas há menos tokens para adivinhar. A medida honesta divide a\n"
      "perda total pelo tamanho do texto em bytes:\n"
      "  bits por byte = perda_por_token * tokens / (bytes * ln 2).\n"
      "Por byte, o BPE ganha: cada token já guarda um pedaço de palavra, que os unigramas de\n"
      "caracteres não conseguem ver. Para comparar dois modelos com tokenizadores diferentes,\n"
      "compare bits por byte, nunca a perda por token.");

  tut::experimente({
      "troque a frase do começo por 'a casa da casa da capa' e refaça os passos no papel: há\n"
      "    empates já no primeiro passo (▁+c e c+a aparecem 3 vezes cada); qual ganha, e por quê?",
      "mude a janela de 64 tokens para outro ponto do livro: quantos caracteres ela cobre?",
      "codifique um texto em inglês com o vocabulário de 1024: quantos tokens por caractere?",
      "resolva os exercícios 17 (fusões à mão) e 18 (por que esta palavra se divide assim).",
  });

  tut::respostas();
  // 1. Os empates de 'a casa da casa da capa': a biblioteca conta os pares e funde o primeiro.
  const std::u32string casa = utf8_to_u32("a casa da casa da capa");
  std::map<std::pair<char32_t, char32_t>, int> pares_casa;
  {
    const std::u32string n = BpeTokenizer::normalize(casa);
    for (std::size_t i = 0; i + 1 < n.size(); ++i)
      if (n[i + 1] != BpeTokenizer::kSpaceMark) ++pares_casa[{n[i], n[i + 1]}];
  }
  int mais = 0;
  for (const auto& [par, n] : pares_casa) mais = std::max(mais, n);
  std::printf("1. pares que aparecem %d vezes:", mais);
  for (const auto& [par, n] : pares_casa)
    if (n == mais)
      std::printf(" %s+%s", utf8(std::u32string(1, par.first)).c_str(),
                  utf8(std::u32string(1, par.second)).c_str());
  const std::u32string casa_normal = BpeTokenizer::normalize(casa);
  const std::set<char32_t> letras_casa(casa_normal.begin(), casa_normal.end());
  const BpeTokenizer uma =
      BpeTokenizer::train(casa, BpeTokenizer::kFirstCharId + letras_casa.size() + 1);
  const BpeMerge& primeira = uma.merges().at(0);
  std::printf("\n   a biblioteca funde primeiro: %s+%s\n", uma.token_text(primeira.left).c_str(),
              uma.token_text(primeira.right).c_str());
  tut::texto(
      "   No empate, ganha o par cujo token da esquerda tem o menor id (e depois o da direita);\n"
      "   os caracteres recebem ids pela frequência no texto (o mais frequente primeiro), então\n"
      "   o par que começa pelo caractere mais comum vence. É uma regra: qualquer regra fixa\n"
      "   serve, desde que o treino seja sempre o mesmo para o mesmo texto.");
  // 2. A janela de 64 tokens em outros pontos do livro.
  std::printf("2. caracteres cobertos por 64 tokens (vocabulário 1024):");
  for (std::size_t inicio : {std::size_t{0}, todos.size() / 2, todos.size() - 64}) {
    const std::vector<std::int32_t> j(todos.begin() + static_cast<std::ptrdiff_t>(inicio),
                                      todos.begin() + static_cast<std::ptrdiff_t>(inicio + 64));
    std::printf(" %zu (token %zu)", medio.decode(j, /*drop_dummy_prefix=*/false).size(), inicio);
  }
  std::printf(
      "\n   varia com o trecho: palavras comuns viram um token, nomes raros viram vários.\n");
  // 3. Inglês com o vocabulário do português.
  const std::u32string ingles =
      load_text(GLASS_SOURCE_DIR "/data/corpora/tinyshakespeare.txt").substr(0, 20000);
  const std::u32string portugues = livro.substr(0, 20000);
  const double tpc_en =
      static_cast<double>(medio.encode(ingles).size()) / static_cast<double>(ingles.size());
  const double tpc_pt =
      static_cast<double>(medio.encode(portugues).size()) / static_cast<double>(portugues.size());
  std::printf(
      "3. tokens por caractere, vocabulário 1024 do livro: português %.3f, inglês (tinyshakespeare) "
      "%.3f\n",
      tpc_pt, tpc_en);
  std::printf("   o inglês precisa de %.2f vezes mais tokens: as fusões aprenderam o português.\n",
              tpc_en / tpc_pt);
  tut::texto(
      "4. As soluções dos exercícios 17 e 18 estão em tutorials/exercicios/solucoes/, e o teste\n"
      "   Tutorials.ExerciseAnswersOfPart6 confere as respostas.");
  return 0;
}
