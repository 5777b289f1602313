// Capítulo 29 — O cache de K/V, e por que ele dá o mesmo texto.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "common.hpp"
#include "data/text.hpp"
#include "sample/sampler.hpp"
#include "treino_rapido.hpp"

using namespace glass;

namespace {

Array como_numeros(const Mask& mascara) {
  Array a(shape_of(mascara));
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = mascara.data()[i] ? 1 : 0;
  return a;
}

// Atenção causal com escala de n consultas novas contra todas as m chaves, com `start`
// posições já no cache (m = start + n).
Tensor atencao(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t start,
               Tensor* pesos_saida = nullptr) {
  const std::size_t n = q.shape()[0], m = k.shape()[0];
  Tensor notas = matmul(q, transpose(k, 0, 1)) / std::sqrt(Scalar(q.shape()[1]));
  Tensor pesos = softmax(
      masked_fill(notas, causal_mask(n, m, start), -std::numeric_limits<Scalar>::infinity()));
  if (pesos_saida) *pesos_saida = pesos;
  return matmul(pesos, v);
}

}  // namespace

int main() {
  tut::capitulo(29, "O cache de K/V");
  tut::novo(
      "nn::KVCache: gerar um caractere por passo sem recalcular o passado, e provar que nada muda.");
  tut::texto(
      "Para gerar o caractere t+1, o modelo precisa da atenção da posição t sobre as\n"
      "posições 0..t. Sem cache, recalculamos tudo a cada passo: Q, K e V de todas as\n"
      "posições, em todas as camadas. Mas, com a máscara causal, K e V da posição j só\n"
      "dependem dos caracteres 0..j: não mudam quando o texto cresce. E o RoPE usa a\n"
      "posição absoluta (start). Então basta guardar K (já girado) e V de cada camada\n"
      "e, a cada passo, calcular só a posição nova. A máscara do capítulo 16 ganha um\n"
      "detalhe, o start; primeiro à mão, com o triângulo do capítulo 15, depois no modelo.\n"
      "As mesmas contas, mas agrupadas de outro jeito (uma consulta por vez em vez da matriz\n"
      "inteira): o mesmo resultado até o arredondamento de float, não bit a bit.");

  tut::secao("A máscara com cache: causal_mask(n, m, start)");
  tut::texto(
      "Com cache, a cada passo entram só n consultas novas, nas posições start .. start+n-1,\n"
      "e elas são comparadas com todas as m = start + n chaves (as guardadas e as novas). A\n"
      "regra da máscara continua a mesma, mas em posições absolutas: a consulta i (posição\n"
      "start+i) não pode ver a chave j quando j > start + i. Sem cache, start = 0 e m = n.");
  // O exemplo do triângulo (capítulo 15, docs/atencao.md).
  Tensor Q3 = Tensor::from_vector({1, 0, 1, 1, 0, 1}, {3, 2});
  Tensor K3 = Q3;
  Tensor V3 = Tensor::from_vector({2, 0, 0, 2, 2, 2}, {3, 2});
  Tensor pesos;
  Tensor saida = atencao(Q3, K3, V3, 0, &pesos);
  tut::matriz("sem cache, n = 3, m = 3, start = 0: pesos", pesos.value());
  tut::matriz("sem cache: saída", saida.value());
  tut::texto(
      "Agora em dois pedaços: primeiro as posições 0 e 1 (o cache guarda as suas K e V) ...");
  Tensor k_cache = slice(K3, 0, 0, 2), v_cache = slice(V3, 0, 0, 2);
  Tensor saida01 = atencao(slice(Q3, 0, 0, 2), k_cache, v_cache, 0);
  tut::matriz("saída das posições 0 e 1", saida01.value());
  tut::texto("... depois a posição 2 sozinha: n = 1, start = 2, m = 3.");
  Tensor q2 = slice(Q3, 0, 2, 3);
  Tensor k_todas = concat({k_cache, slice(K3, 0, 2, 3)}, 0);  // o cache ganha a chave nova
  Tensor v_todas = concat({v_cache, slice(V3, 0, 2, 3)}, 0);
  tut::matriz("máscara (1, 3, 2)", como_numeros(causal_mask(1, 3, 2)), 0);
  Tensor saida2 = atencao(q2, k_todas, v_todas, 2, &pesos);
  tut::linha("pesos da posição 2 com cache", pesos.value());
  tut::linha("saída da posição 2 com cache", saida2.value());
  tut::texto("Os mesmos números da última linha do triângulo: o cache não muda a conta.");
  tut::texto(
      "O erro clássico: esquecer o start. Com causal_mask(1, 3, 0), a única consulta seria\n"
      "tratada como posição 0 e só poderia ver a chave 0, como se o texto anterior não\n"
      "existisse:");
  atencao(q2, k_todas, v_todas, 0, &pesos);
  tut::linha("pesos com start errado", pesos.value());
  tut::texto("Um pedaço do meio: n = 2 consultas novas (posições 1 e 2), start = 1, m = 3.");
  tut::matriz("máscara (2, 3, 1)", como_numeros(causal_mask(2, 3, 1)), 0);
  atencao(slice(Q3, 0, 1, 3), K3, V3, 1, &pesos);
  tut::matriz("pesos das posições 1 e 2", pesos.value());
  tut::texto(
      "São as linhas 1 e 2 do triângulo: a máscara é o triângulo deslocado de start colunas.\n"
      "Em Attention::forward_reference (nn/attention.cpp), o passo 3 lê as chaves e os\n"
      "valores das posições 0 .. start-1 do cache da própria camada (LayerKVCache, em\n"
      "nn/kv_cache.cpp), guarda os novos e junta tudo com concat; o passo 6 usa\n"
      "causal_mask(n, m, start) com m = start + n, exatamente como acima. O RoPE também\n"
      "recebe o start (capítulo 17): a posição nova gira pelo seu lugar no texto.");

  tut::ModeloPequeno m = tut::treinar_rapido();
  const Decoder& modelo = *m.modelo;
  const ModelConfig& cfg = modelo.config();
  NoGradGuard sem_fita;

  tut::secao("Logits com e sem cache, posição por posição");
  const auto ids = m.tokenizer.encode(U"Capitu, disse eu");
  const std::size_t n = ids.size();
  Ids tudo = Ids::from_shape({1, n});
  std::copy(ids.begin(), ids.end(), tudo.data());
  const Array logits_tudo = modelo.forward(tudo).value();  // (1, n, V), sem cache
  KVCache cache(cfg, 1);
  double diferenca = 0;
  const std::size_t V = cfg.vocab_size;
  for (std::size_t t = 0; t < n; ++t) {
    Ids um = Ids::from_shape({1, 1});
    um(0, 0) = ids[t];
    const Array logits_um = modelo.forward(um, &cache).value();  // (1, 1, V), start = t
    for (std::size_t v = 0; v < V; ++v) {
      diferenca = std::max(diferenca,
                           double(std::fabs(logits_um.data()[v] - logits_tudo.data()[t * V + v])));
    }
  }
  std::printf("posições: %zu   posições no cache: %zu\n", n, cache.length());
  std::printf("forma do cache de chaves da camada 0: %s (B, capacidade, n_kv_heads, head_dim)\n",
              shape_str(shape_of(cache.layers[0].keys)).c_str());
  std::printf("diferença máxima nos logits: %.6f\n", diferenca);
  tut::texto(
      "Da ordem de 1e-6: só arredondamento de float (as mesmas contas, agrupadas de outro\n"
      "jeito dentro das multiplicações de matrizes).");

  tut::secao("Gerando 60 caracteres gulosamente, com e sem cache");
  SamplingOptions com, sem;
  com.temperature = sem.temperature = 0;
  com.use_kv_cache = true;
  sem.use_kv_cache = false;
  const auto prompt = m.tokenizer.encode(U"Capitu");
  std::mt19937_64 rng1(23), rng2(23);
  auto t0 = std::chrono::steady_clock::now();
  const auto texto_com = generate(modelo, prompt, 60, cfg.context_length, com, rng1);
  auto t1 = std::chrono::steady_clock::now();
  const auto texto_sem = generate(modelo, prompt, 60, cfg.context_length, sem, rng2);
  auto t2 = std::chrono::steady_clock::now();
  std::printf("com cache: Capitu%s\n", m.tokenizer.decode_utf8(texto_com).c_str());
  std::printf("sem cache: Capitu%s\n", m.tokenizer.decode_utf8(texto_sem).c_str());
  std::printf("textos iguais: %s\n", texto_com == texto_sem ? "sim" : "não");
  std::printf("tempo com cache: %.3f s   sem cache: %.3f s\n",
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count());

  tut::secao("O caminho rápido, e o teste que o prova igual");
  tut::texto(
      "glass train e glass sample rodam o caminho rápido (ModelConfig::ops_path = OpsPath::fast,\n"
      "a opção --ops): os passos 3 a 8 de nn/attention.cpp viram um núcleo só,\n"
      "em autograd/kernels/. No treino, causal_attention calcula, por blocos de 32\n"
      "consultas, notas -> máscara -> softmax -> mistura sem guardar a matriz de pesos;\n"
      "na geração, attend_to_cache faz duas multiplicações matriz-vetor por consulta e\n"
      "cabeça, lendo o cache no lugar (é o que rodou nas seções acima). Os tutoriais, o\n"
      "inspetor e glass gradcheck usam o caminho de referência, o dos capítulos 14 a 20.\n"
      "O cabeçalho de cada núcleo (autograd/kernels/kernels.hpp) diz quais operações ele\n"
      "substitui, e os testes provam a igualdade em double: valores e gradientes de cada\n"
      "núcleo (tests/autograd/fast_kernels_f64_test.cpp), logits e gradientes do modelo inteiro\n"
      "(tests/nn/attention_paths_f64_test.cpp), e 30 passos de treino com as mesmas perdas\n"
      "e o mesmo texto guloso (tests/train/attention_paths_test.cpp).");
  m.modelo->set_ops_path(OpsPath::reference);
  const Array logits_referencia = modelo.forward(tudo).value();
  m.modelo->set_ops_path(OpsPath::fast);
  double entre_caminhos = 0;
  for (std::size_t i = 0; i < logits_tudo.size(); ++i)
    entre_caminhos = std::max(
        entre_caminhos, double(std::fabs(logits_tudo.data()[i] - logits_referencia.data()[i])));
  std::printf("diferença máxima entre os caminhos (rápido e referência): %.6f\n", entre_caminhos);

  tut::secao("Quanto trabalho o cache poupa");
  std::size_t sem_cache = 0;
  for (std::size_t t = 1; t <= cfg.context_length; ++t) sem_cache += t;
  std::printf(
      "para encher o contexto de %zu posições: sem cache %zu posições calculadas, com cache %zu\n",
      cfg.context_length, sem_cache, cfg.context_length);
  tut::texto(
      "Sem cache o custo cresce com o quadrado do tamanho do texto; com cache, cada\n"
      "passo calcula uma posição (a atenção dela ainda lê todas as chaves guardadas).");

  tut::secao("Depois da janela: rolling contra exact");
  tut::texto(
      "Quando o texto passa do contexto, a janela desliza. Com RoPE, q·k só depende da\n"
      "distância entre as posições: generate() descarta a chave mais antiga e gira o token\n"
      "novo para a sua posição absoluta (modo rolling, o padrão). O modo exact recalcula a\n"
      "janela do zero a cada caractere, como sem cache: mais lento. Dentro da janela os dois\n"
      "dão os mesmos logits; depois dela, não: no rolling, as chaves guardadas foram\n"
      "calculadas quando o texto anterior à janela ainda era visível, e o carregam.");
  const std::u32string livro = load_text(GLASS_SOURCE_DIR "/data/corpora/domcasmurro.txt");
  const std::vector<std::int32_t> trecho =
      m.tokenizer.encode(livro.substr(0, 3 * cfg.context_length));
  SamplingOptions rolando, exato;
  exato.window_mode = WindowMode::exact;
  NextTokenLogits logits_rolando(modelo, cfg.context_length, rolando);
  NextTokenLogits logits_exato(modelo, cfg.context_length, exato);
  double dentro = 0, depois = 0;  // a maior diferença dentro da janela e depois dela
  for (std::size_t t = 1; t <= trecho.size(); ++t) {
    const std::vector<std::int32_t> texto(trecho.begin(), trecho.begin() + long(t));
    const std::vector<double> a = logits_rolando(texto), b = logits_exato(texto);
    double d = 0;
    for (std::size_t v = 0; v < a.size(); ++v) d = std::max(d, std::fabs(a[v] - b[v]));
    if (t <= cfg.context_length) {
      dentro = std::max(dentro, d);
    } else {
      depois = std::max(depois, d);
    }
  }
  std::printf("janela: %zu   texto: %zu caracteres do livro\n", cfg.context_length, trecho.size());
  std::printf("diferença máxima nos logits, rolling e exact, dentro da janela: %.6f\n", dentro);
  std::printf("diferença máxima nos logits, rolling e exact, depois da janela: %.6f\n", depois);
  SamplingOptions guloso_rolando, guloso_exato;
  guloso_rolando.temperature = guloso_exato.temperature = 0;
  guloso_exato.window_mode = WindowMode::exact;
  std::mt19937_64 rng3(23), rng4(23);
  const auto longo_rolando =
      generate(modelo, prompt, 300, cfg.context_length, guloso_rolando, rng3);
  const auto longo_exato = generate(modelo, prompt, 300, cfg.context_length, guloso_exato, rng4);
  std::size_t primeira_diferenca = 0;
  while (primeira_diferenca < longo_rolando.size() &&
         longo_rolando[primeira_diferenca] == longo_exato[primeira_diferenca]) {
    ++primeira_diferenca;
  }
  std::printf(
      "300 caracteres gulosos, rolling e exact: %s\n",
      primeira_diferenca == longo_rolando.size()
          ? "textos iguais"
          : ("diferem a partir do caractere " + std::to_string(primeira_diferenca)).c_str());
  tut::texto(
      "Os logits mudam depois da janela, mas o texto guloso só muda quando a diferença\n"
      "troca o maior logit de lugar: com um modelo tão pequeno, que pouco usa o passado\n"
      "distante, isso pode não acontecer. Amostrando (temperatura > 0), qualquer mudança\n"
      "nas probabilidades pode mudar o sorteio.\n"
      "O cache de um modelo de verdade em bytes, e por que gerar um token de cada vez é\n"
      "limitado pela leitura da memória e não pelas contas: docs/escala.md.");

  tut::experimente({
      "processe as posições do triângulo uma por uma (start = 0, 1, 2) e confira cada linha;",
      "imprima causal_mask(2, 5, 3): a consulta 0 (posição 3) vê 4 chaves, a consulta 1\n"
      "    (posição 4) vê as 5;",
      "esqueça de passar o cache para forward no laço: cada caractere vira a posição 0, sem\n"
      "    passado, e a diferença nos logits fica grande;",
      "troque WindowMode::exact por use_kv_cache = false em exato: os logits não mudam (até o\n"
      "    arredondamento), porque sem cache a janela é sempre recalculada, como no exact;",
      "imprima cache.length() antes e depois de cada forward.",
  });
  tut::respostas();
  {
    for (std::size_t p = 0; p < 3; ++p) {
      Tensor pesos_p;
      atencao(slice(Q3, 0, p, p + 1), slice(K3, 0, 0, p + 1), slice(V3, 0, 0, p + 1), p, &pesos_p);
      tut::linha("1. uma por uma, start = " + std::to_string(p) + ", pesos", pesos_p.value());
    }
    std::printf("   (as três linhas do triângulo, uma por vez)\n");
    tut::matriz("2. causal_mask(2, 5, 3)", como_numeros(causal_mask(2, 5, 3)), 0);
    std::printf("   (0 = pode ver: a consulta 0 vê 4 chaves, a consulta 1 vê as 5)\n");
  }
  {
    double sem_passado = 0;
    for (std::size_t t = 0; t < n; ++t) {
      Ids um = Ids::from_shape({1, 1});
      um(0, 0) = ids[t];
      const Array logits_um = modelo.forward(um).value();  // sem cache: sempre a posição 0
      for (std::size_t v = 0; v < V; ++v) {
        sem_passado = std::max(
            sem_passado, double(std::fabs(logits_um.data()[v] - logits_tudo.data()[t * V + v])));
      }
    }
    std::printf("3. diferença máxima nos logits, sem passar o cache: %.6f\n", sem_passado);
  }
  {
    SamplingOptions sem_cache_opcoes;
    sem_cache_opcoes.use_kv_cache = false;
    NextTokenLogits logits_sem_cache(modelo, cfg.context_length, sem_cache_opcoes);
    NextTokenLogits logits_exato2(modelo, cfg.context_length, exato);
    double d = 0;
    for (std::size_t t = 1; t <= trecho.size(); ++t) {
      const std::vector<std::int32_t> texto(trecho.begin(), trecho.begin() + long(t));
      const std::vector<double> a = logits_sem_cache(texto), b = logits_exato2(texto);
      for (std::size_t v = 0; v < a.size(); ++v) d = std::max(d, std::fabs(a[v] - b[v]));
    }
    std::printf("4. diferença máxima nos logits, sem cache e exact, em todo o trecho: %.6f\n", d);
  }
  {
    KVCache c(cfg, 1);
    for (std::size_t t = 0; t < 3; ++t) {
      Ids um = Ids::from_shape({1, 1});
      um(0, 0) = ids[t];
      const std::size_t antes = c.length();
      modelo.forward(um, &c);
      std::printf("5. forward do caractere %zu: cache.length() %zu -> %zu\n", t, antes, c.length());
    }
  }
  return 0;
}
