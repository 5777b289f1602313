// Capítulo 44 — Um autoencoder esparso: o fluxo residual em traços que se podem ler.
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "autograd/threads.hpp"
#include "common.hpp"
#include "data/text.hpp"
#include "treino_rapido.hpp"

#include "interp/sae.hpp"
#include "interp/sae_inspect.hpp"
#include "nn/tracer.hpp"
#include "train/sae_trainer.hpp"

using namespace glass;

namespace {

constexpr std::size_t kLote = 256;     // ativações por passo
constexpr std::size_t kMorto = 10240;  // tokens sem disparar para contar como morto

std::string mostrar(const Tokenizer& tok, std::int32_t id) {
  if (id == 0) return "?";
  const char32_t c = tok.char_of(id);
  if (c == U' ') return "_";
  if (c == U'\n') return "\\n";
  return char_to_utf8(c);
}

/// As ativações no ponto para todas as janelas de 32 caracteres do trecho de treino do modelo:
/// (N, d_model), uma linha por caractere.
Array ativacoes_de_treino(const Decoder& modelo, const Tokenizer& tok, const std::string& ponto) {
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::vector<std::int32_t> ids = tok.encode(livro.substr(0, 30000));
  const std::size_t T = modelo.config().context_length, n = ids.size() / T;
  Ids x = Ids::from_shape({n, T});
  for (std::size_t i = 0; i < n * T; ++i) x.data()[i] = ids[i];
  return activations_at(modelo, x, sae_point_index(modelo, ponto));
}

struct Treinado {
  std::unique_ptr<SparseAutoencoder> sae;
  std::size_t mortos = 0;  ///< latentes sem disparo nos últimos kMorto tokens de treino
};

/// O laço de `glass sae train`, escrito por inteiro: TopK, FVU + AuxK/32, AdamW, o gradiente do
/// decodificador projetado na esfera e as linhas renormalizadas a cada passo.
Treinado treinar_sae(const Array& X, std::size_t F, std::size_t k, std::size_t passos,
                     double lr = 2e-3) {
  const std::size_t N = X.shape()[0], D = X.shape()[1];
  Rng rng(44);
  Treinado r{std::make_unique<SparseAutoencoder>(D, F, k, rng), 0};
  SparseAutoencoder& sae = *r.sae;
  sae.b_pre.value() = geometric_median(X);
  AdamWConfig adam;
  adam.beta2 = 0.999;
  adam.weight_decay = 0;
  AdamW otimizador(sae.named_parameters(), adam);
  std::vector<std::size_t> desde(F, 0);
  std::vector<bool> morto(F, false);
  Array x = xt::zeros<Scalar>({kLote, D});
  for (std::size_t passo = 0; passo < passos; ++passo) {
    for (std::size_t i = 0; i < kLote; ++i) {
      const std::size_t linha = rng() % N;
      for (std::size_t j = 0; j < D; ++j) x(i, j) = X(linha, j);
    }
    const Tensor pre = sae.pre_activations(Tensor(x));
    const Tensor z = topk_relu(pre, k);
    const Tensor x_hat = sae.decode(z);
    std::vector<bool> disparou(F, false);
    for (std::size_t j = 0; j < z.size(); ++j)
      if (z.value().data()[j] > 0) disparou[j % F] = true;
    const Tensor perda =
        normalized_mse(x_hat, x) +
        auxk_loss(sae, pre, Array(x - x_hat.value()), morto, D / 2) * Scalar(1.0 / 32);
    otimizador.zero_grad();
    perda.backward();
    sae.project_decoder_grad();
    const double fim = passo < 0.8 * passos ? 1.0 : (passos - passo) / (0.2 * passos);
    otimizador.step(lr * fim);
    sae.normalize_decoder();
    r.mortos = 0;
    for (std::size_t i = 0; i < F; ++i) {
      desde[i] = disparou[i] ? 0 : desde[i] + kLote;
      morto[i] = desde[i] >= kMorto;
      r.mortos += morto[i] ? 1 : 0;
    }
  }
  return r;
}

/// O SAE medido nas janelas de validação: FVU, L0, latentes calados, as perdas, e os latentes de
/// cada posição (para os contextos).
struct Medida {
  double fvu = 0, l0 = 0, limpa = 0, com_sae = 0, com_media = 0;
  std::size_t calados = 0;
  Array z;  ///< (B T, F), os latentes de cada caractere de validação
};

Medida medir(const Decoder& modelo, const SparseAutoencoder& sae, const std::string& ponto,
             const Ids& x, const Ids& y) {
  NoGradGuard sem_fita;
  const std::size_t D = sae.d_model(), F = sae.n_latents();
  Medida m;
  Array media;
  // A emenda: um gancho no ponto troca o fluxo pela reconstrução (ou pela média) e o mede.
  bool trocar_pela_media = false;
  Tracer t;
  t.set_recording(false);
  t.add_hook(ponto, [&](const std::string&, Array& valor) {
    const Shape forma(valor.shape().begin(), valor.shape().end());
    Array a = valor;
    a.reshape({a.size() / D, D});
    media = xt::mean(a, {0});
    Array novo;
    if (trocar_pela_media) {
      novo = a;
      for (std::size_t i = 0; i < a.shape()[0]; ++i)
        for (std::size_t j = 0; j < D; ++j) novo(i, j) = media(j);
    } else {
      m.z = sae.encode(Tensor(a)).value();
      novo = sae.decode(Tensor(m.z)).value();
      double erro = 0, variancia = 0;
      for (std::size_t i = 0; i < a.shape()[0]; ++i)
        for (std::size_t j = 0; j < D; ++j) {
          erro += std::pow(double(novo(i, j) - a(i, j)), 2);
          variancia += std::pow(double(a(i, j) - media(j)), 2);
        }
      m.fvu = erro / variancia;
    }
    novo.reshape(forma);
    valor = std::move(novo);
  });
  m.limpa = cross_entropy(modelo.forward(x), y).item();
  m.com_sae = cross_entropy(modelo.forward(x, nullptr, &t), y).item();
  trocar_pela_media = true;
  m.com_media = cross_entropy(modelo.forward(x, nullptr, &t), y).item();
  std::vector<bool> disparou(F, false);
  double ativos = 0;
  for (std::size_t j = 0; j < m.z.size(); ++j)
    if (m.z.data()[j] > 0) disparou[j % F] = true, ativos += 1;
  m.l0 = ativos / m.z.shape()[0];
  m.calados = std::count(disparou.begin(), disparou.end(), false);
  return m;
}

/// As medidas que não dependem de quais latentes o treino fez (variam pouco de CPU para CPU)
/// numa linha, e as contagens de latentes, que dependem, noutra que começa com "~ ".
void linha_de_medida(const std::string& rotulo, const Medida& m, std::size_t mortos,
                     std::size_t F) {
  std::printf("%s: FVU %.4f | L0 %.2f | perda %.4f -> %.4f | aumento %+.4f\n", rotulo.c_str(),
              m.fvu, m.l0, m.limpa, m.com_sae, m.com_sae - m.limpa);
  std::printf("~ %s: mortos %zu de %zu | calados na validação %zu\n", rotulo.c_str(), mortos, F,
              m.calados);
}

}  // namespace

int main() {
  tut::capitulo(44, "Um autoencoder esparso: o fluxo residual em traços que se podem ler");
  tut::novo(
      "um dicionário aprendido para o fluxo residual (Gao et al. 2024): cada vetor do fluxo\n"
      "reescrito como a soma de no máximo k direções de um dicionário de F, treinado com a\n"
      "mesma fita e o mesmo AdamW do modelo; e as quatro medidas de um SAE (FVU, L0, latentes\n"
      "mortos e a perda com o SAE no lugar).");
  tut::texto(
      "Os capítulos 32 a 35 e 43 perguntam o que cada CABEÇA faz. Mas o fluxo residual tem\n"
      "d_model = 64 números por posição, e cada número mistura muitas coisas: um neurônio não é\n"
      "um conceito. Um autoencoder esparso procura direções do fluxo que sejam: F direções\n"
      "(mais que 64), das quais só k valem algo em cada token. Encoder, TopK e decoder:\n"
      "  z = ReLU(TopK(W_enc (x - b_pre) + b_enc)),   x̂ = z W_dec + b_pre,\n"
      "cada linha de W_dec de norma 1. Um latente i é a direção W_dec[i]; z_i diz quanto dela\n"
      "o token carrega. O modelo é o pequeno dos capítulos 32 a 34 e 43 (2 camadas, d_model\n"
      "64); o ponto é layers.0.out, o fluxo entre os dois blocos.");

  // Produtos de 256 x 64 x 256 são pequenos demais para dividir entre threads: numa só, o
  // capítulo roda mais rápido (e dá os mesmos números).
  set_num_threads(1);
  tut::ModeloPequeno m = tut::treinar_rapido();
  const Decoder& modelo = *m.modelo;
  const std::string ponto = "layers.0.out";  // o fluxo entre os dois blocos
  const Array X = ativacoes_de_treino(modelo, m.tokenizer, ponto);
  Ids xv, yv;
  tut::janelas_de_validacao(m.tokenizer, 64, modelo.config().context_length, xv, yv);
  std::printf(
      "ativações de treino em %s: %zu caracteres x d_model %zu; validação: %zu "
      "caracteres\n",
      ponto.c_str(), X.shape()[0], X.shape()[1], xv.size());

  tut::secao("1. Treinar: 256 latentes (4 x d_model), k = 8, 600 passos de 256 ativações");
  const Treinado principal = treinar_sae(X, 256, 8, 600);
  const Medida med = medir(modelo, *principal.sae, ponto, xv, yv);
  linha_de_medida("SAE 256, k 8", med, principal.mortos, 256);
  std::printf("perda limpa %.4f, com o SAE no lugar %.4f, com a média no lugar %.4f\n", med.limpa,
              med.com_sae, med.com_media);
  const double recuperada = (med.com_media - med.com_sae) / (med.com_media - med.limpa);
  std::printf("fração da perda recuperada: %.3f\n", recuperada);
  tut::texto(
      "FVU (fração da variância não explicada) = soma |x - x̂|² / soma |x - x̄|²: 0 é perfeito,\n"
      "1 não é melhor que responder a média x̄ para todo token. L0 é o número médio de latentes\n"
      "não nulos por token: o TopK o prende em no máximo k. Um latente MORTO não disparou em\n"
      "nenhum dos últimos 10240 tokens de treino: são parâmetros que nada explicam (a perda AuxK\n"
      "empurra os mortos para o que os vivos erram); CALADOS são os que não disparam nas 2048\n"
      "posições de validação. O FVU mede o fluxo; a perda com o SAE no lugar mede o que o MODELO\n"
      "perde ao ler a reconstrução em vez do fluxo verdadeiro. A régua é trocar o fluxo pela\n"
      "média (apagar o que a camada 0 escreveu): a fração recuperada diz quanto do caminho\n"
      "entre essa perda e a limpa o SAE anda (o \"CE loss recovered\" do SAELens).\n"
      "As linhas que começam com \"~ \" contam latentes: dependem de quais direções o treino\n"
      "achou e mudam de uma CPU para outra (os últimos bits dos floats); as outras não.\n"
      "Aqui muitos latentes morrem, com AuxK e tudo: um modelo de 2 camadas treinado por 200\n"
      "passos escreve no fluxo menos traços distintos do que 256 direções, e as que sobram não\n"
      "acham o que explicar (a resposta 1 mostra o mesmo com 1024). O SAE do modelo padrão (1024 latentes num fluxo de d_model 128, depois\n"
      "de 2000 passos) termina sem nenhum morto: docs/interpretabilidade.md.");

  tut::secao("2. Um latente: onde ele dispara e o que empurra");
  const std::size_t F = principal.sae->n_latents(), N = med.z.shape()[0];
  const std::size_t T = xv.shape()[1];
  // O latente que dispara em mais posições entre os que disparam em mais de um caractere.
  std::size_t escolhido = 0, melhor = 0;
  for (std::size_t i = 0; i < F; ++i) {
    std::set<std::int32_t> atuais;
    std::size_t vezes = 0;
    for (std::size_t p = 0; p < N; ++p)
      if (med.z(p, i) > 0) ++vezes, atuais.insert(xv.data()[p]);
    if (atuais.size() > 1 && vezes > melhor) melhor = vezes, escolhido = i;
  }
  std::vector<std::size_t> ordem(N);
  for (std::size_t p = 0; p < N; ++p) ordem[p] = p;
  std::stable_sort(ordem.begin(), ordem.end(), [&](std::size_t a, std::size_t b) {
    return med.z(a, escolhido) > med.z(b, escolhido);
  });
  std::printf("~ latente %zu: dispara em %zu de %zu posições\n", escolhido, melhor, N);
  for (std::size_t r = 0; r < 6; ++r) {
    const std::size_t p = ordem[r], inicio = p - std::min<std::size_t>(p % T, 10);
    std::string antes;
    for (std::size_t q = inicio; q < p; ++q) antes += mostrar(m.tokenizer, xv.data()[q]);
    std::printf("~ %.3f  %12s[%s]\n", double(med.z(p, escolhido)), antes.c_str(),
                mostrar(m.tokenizer, xv.data()[p]).c_str());
  }
  const LogitEffects efeito = latent_logit_effects(modelo, *principal.sae, escolhido, 5);
  std::printf("~ promove:");
  for (const TokenScore& s : efeito.promoted)
    std::printf("  '%s' %+.3f", mostrar(m.tokenizer, s.token).c_str(), s.score);
  std::printf("\n~ suprime:");
  for (const TokenScore& s : efeito.suppressed)
    std::printf("  '%s' %+.3f", mostrar(m.tokenizer, s.token).c_str(), s.score);
  std::printf("\n");
  tut::texto(
      "Os contextos (o caractere atual entre colchetes) são uma hipótese sobre o que o latente\n"
      "significa; o efeito nos logits, W_dec[i] · diag(g) · W_U^T (o ganho da RMSNorm final\n"
      "incorporado à matriz de saída), diz quais próximos caracteres sua direção favorece pelo\n"
      "caminho direto, sem o bloco 1 no meio. `glass sae inspect --latent N` mostra o mesmo num\n"
      "modelo treinado por `glass train`, e `glass sample --steer N=ESCALA` testa a hipótese\n"
      "somando a direção ao fluxo (docs/interpretabilidade.md lê três latentes do modelo padrão).");

  tut::secao("3. O que k faz (256 latentes, 300 passos cada)");
  std::vector<Medida> por_k;
  for (std::size_t k : {2, 8, 32}) {
    const Treinado t = treinar_sae(X, 256, k, 300);
    por_k.push_back(medir(modelo, *t.sae, ponto, xv, yv));
    linha_de_medida("k " + std::to_string(k), por_k.back(), t.mortos, 256);
  }
  tut::texto(
      "k é o L0. Mais latentes por token explicam mais do fluxo e o modelo perde menos ao ler a\n"
      "reconstrução, mas cada token passa a ser descrito por mais direções, cada uma menos\n"
      "específica: a esparsidade, que torna um latente legível, é o que se paga. Com k grande\n"
      "o bastante (k = d_model) o SAE poderia copiar o fluxo sem aprender nada que se leia.");

  tut::experimente({
      "dê ao SAE 1024 latentes (16 x d_model) com k 8: o FVU cai? quantos ficam calados?",
      "treine o SAE no fluxo depois do último bloco (layers.1.out): é mais fácil ou mais difícil?",
  });
  tut::respostas();
  {
    const Treinado grande = treinar_sae(X, 1024, 8, 300);
    const Medida g = medir(modelo, *grande.sae, ponto, xv, yv);
    linha_de_medida("1) SAE 1024, k 8", g, grande.mortos, 1024);
    std::printf("1) com 256 latentes e os mesmos 300 passos: FVU %.4f\n", por_k[1].fvu);
    tut::texto(
        "   Mais latentes, cada um com menos a cobrir: o FVU cai pouco, e muitos latentes não\n"
        "   acham o que explicar em 2048 posições de validação. Um dicionário maior só vale se\n"
        "   houver traços raros para ele guardar (e passos para aprendê-los).");
  }
  {
    const Array X1 = ativacoes_de_treino(modelo, m.tokenizer, "layers.1.out");
    const Treinado ultimo = treinar_sae(X1, 256, 8, 300);
    const Medida u = medir(modelo, *ultimo.sae, "layers.1.out", xv, yv);
    linha_de_medida("2) layers.1.out, SAE 256, k 8", u, ultimo.mortos, 256);
    std::printf("2) layers.0.out com os mesmos 300 passos: FVU %.4f\n", por_k[1].fvu);
    tut::texto(
        "   Mais difícil: depois do último bloco o fluxo acumulou o que os dois blocos escrevem,\n"
        "   e o mesmo dicionário explica menos dele. No modelo padrão (bench/README.md) o FVU sobe\n"
        "   do mesmo jeito: 0.0240 depois da camada 0, 0.0473 depois da 1, 0.0664 depois da última.");
  }
  return 0;
}
