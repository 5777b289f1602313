// Capítulo 10 — Caracteres como tokens (UTF-8).
#include <string>

#include "common.hpp"
#include "data/text.hpp"
#include "data/tokenizer.hpp"

using namespace glass;

static void mostrar_ids(const char* rotulo, const std::vector<std::int32_t>& ids) {
  std::printf("%s:", rotulo);
  for (auto id : ids) std::printf(" %d", id);
  std::printf("\n");
}

int main() {
  tut::capitulo(10, "Caracteres como tokens (UTF-8)");
  tut::novo("texto vira números: cada caractere Unicode recebe um id.");
  tut::texto(
      "O modelo não lê letras, lê ids inteiros. Nosso tokenizador é o mais simples\n"
      "possível: um token por caractere. Cuidado com a palavra 'caractere': no arquivo,\n"
      "o texto está em UTF-8, onde 'a' ocupa 1 byte mas 'á', 'ç' e 'ã' ocupam 2.\n"
      "Por isso primeiro decodificamos os bytes em pontos de código Unicode (U+00E1 = 'á')\n"
      "e só então damos um id a cada um. O id 0 fica reservado para 'desconhecido'.");

  tut::secao("Bytes não são caracteres");
  const std::string frase = "Olá, Capitu!";
  const std::u32string pontos = utf8_to_u32(frase);
  std::printf("texto: %s\n", frase.c_str());
  std::printf("bytes: %zu   caracteres: %zu\n", frase.size(), pontos.size());
  std::printf("bytes de 'á':");
  for (unsigned char byte : std::string("á")) std::printf(" 0x%02X", byte);
  std::printf("  -> %s\n", describe_char(U'á').c_str());

  tut::secao("Um vocabulário a partir de um texto");
  const Tokenizer tok = Tokenizer::from_text(pontos);
  std::printf("tamanho do vocabulário: %zu (%zu caracteres + o id 0)\n", tok.vocab_size(),
              tok.chars().size());
  for (std::size_t i = 0; i < tok.chars().size(); ++i) {
    std::printf("  id %zu = %s\n", i + 1, describe_char(tok.chars()[i]).c_str());
  }
  tut::texto("Os mais frequentes vêm primeiro (empates: menor ponto de código primeiro).");
  const auto ids = tok.encode(pontos);
  mostrar_ids("ids", ids);
  std::printf("de volta: %s\n", tok.decode_utf8(ids).c_str());

  tut::secao("Um caractere fora do vocabulário");
  try {
    tok.encode(utf8_to_u32("Bentinho"));
  } catch (const UnknownCharacterError& e) {
    std::printf("erro: %s\n", e.what());
  }
  std::size_t desconhecidos = 0;
  const auto com_zero = tok.encode(utf8_to_u32("Capitu?"), /*map_unknown=*/true, &desconhecidos);
  mostrar_ids("com map_unknown", com_zero);
  std::printf("desconhecidos: %zu\n", desconhecidos);

  tut::secao("Bytes inválidos");
  try {
    utf8_to_u32(std::string("ab\xC3(", 4));
  } catch (const Utf8Error& e) {
    std::printf("posição do byte inválido: %zu\nerro: %s\n", e.byte_offset(), e.what());
  }

  tut::secao("O livro inteiro: Dom Casmurro");
  TextInfo info;
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt", &info);
  const Tokenizer tok_livro = Tokenizer::from_text(livro);
  std::printf("bytes: %zu   caracteres: %zu   vocabulário: %zu\n", info.bytes, livro.size(),
              tok_livro.vocab_size());
  std::printf("os 10 mais frequentes:");
  for (std::size_t i = 0; i < 10 && i < tok_livro.chars().size(); ++i) {
    std::printf(" %s", describe_char(tok_livro.chars()[i]).c_str());
  }
  std::printf("\n");

  tut::experimente({
      "troque a frase por uma com emoji: quantos bytes tem um emoji em UTF-8?",
      "carregue data/corpora/tinyshakespeare.txt e compare o vocabulário;",
      "passe vocab_cap = 20 para from_text: o que acontece com os caracteres raros?",
  });
  tut::respostas();
  {
    const std::string emoji = "\xF0\x9F\x99\x82";  // U+1F642, o rosto sorrindo
    std::printf("um emoji (U+1F642): %zu bytes, %zu caractere\n", emoji.size(),
                utf8_to_u32(emoji).size());
    const std::u32string shakespeare =
        load_text(GLASS_SOURCE_DIR "/data/corpora/tinyshakespeare.txt");
    std::printf("vocabulário do tinyshakespeare: %zu (sem acentos: só ASCII)\n",
                Tokenizer::from_text(shakespeare).vocab_size());
    const Tokenizer curto = Tokenizer::from_text(livro, 20);
    std::size_t raros = 0;
    const auto ids_curto = curto.encode(livro, /*map_unknown=*/true, &raros);
    std::printf("vocab_cap = 20: vocabulário %zu; %zu dos %zu caracteres do livro viram o id 0\n",
                curto.vocab_size(), raros, ids_curto.size());
  }
  return 0;
}
