// Capítulo 37 — Backprop à mão: um neurônio no papel, um autograd de escalares, a fita.
// (Lê-se depois do capítulo 09: usa só a regra da cadeia e a fita.)
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "autograd/ops.hpp"
#include "common.hpp"

using namespace glass;

// ---- Um autograd de escalares, inteiro (como o micrograd de Karpathy, em C++) ----------------
//
// Cada Valor é um nó de um grafo: o número (dado), a derivada da perda em relação a ele (grad),
// os nós de onde veio (filhos) e uma função (volta) que, conhecido o grad do nó, soma a parte de
// cada filho. backward() ordena o grafo (filhos antes dos pais) e chama as voltas do fim para o
// começo. É a fita do capítulo 03, só que com números soltos no lugar de tensores.

// Um erro clássico, para ver o que acontece: trocar o += das voltas por = (ver Experimente).
static bool g_acumular = true;
static void somar(double& grad, double parte) { grad = g_acumular ? grad + parte : parte; }

struct No {
  double dado = 0, grad = 0;
  std::vector<std::shared_ptr<No>> filhos;
  std::function<void()> volta = [] {};  // folhas (entradas, pesos) não mandam nada
  std::string op;
};

class Valor {
 public:
  Valor(double dado) : no_(std::make_shared<No>()) { no_->dado = dado; }  // NOLINT: 2.0 -> Valor
  double dado() const { return no_->dado; }
  double grad() const { return no_->grad; }

  friend Valor operator+(const Valor& a, const Valor& b) {
    Valor s = novo(a.dado() + b.dado(), "+", {a, b});
    No *pa = a.no_.get(), *pb = b.no_.get(), *ps = s.no_.get();
    s.no_->volta = [=] {  // d(a+b)/da = 1, d(a+b)/db = 1
      somar(pa->grad, ps->grad);
      somar(pb->grad, ps->grad);
    };
    return s;
  }
  friend Valor operator*(const Valor& a, const Valor& b) {
    Valor p = novo(a.dado() * b.dado(), "*", {a, b});
    No *pa = a.no_.get(), *pb = b.no_.get(), *pp = p.no_.get();
    p.no_->volta = [=] {  // d(ab)/da = b, d(ab)/db = a
      somar(pa->grad, pb->dado * pp->grad);
      somar(pb->grad, pa->dado * pp->grad);
    };
    return p;
  }
  friend Valor operator-(const Valor& a, const Valor& b) { return a + b * Valor(-1); }
  Valor tanh() const {
    const double t = std::tanh(dado());
    Valor o = novo(t, "tanh", {*this});
    No *px = no_.get(), *po = o.no_.get();
    o.no_->volta = [=] { somar(px->grad, (1 - t * t) * po->grad); };  // tanh' = 1 - tanh²
    return o;
  }

  /// dL/d(cada nó) para L = este nó: ordena o grafo e volta do fim para o começo.
  void backward() {
    std::vector<No*> ordem;
    std::set<No*> visto;
    std::function<void(No*)> visitar = [&](No* n) {
      if (!visto.insert(n).second) return;
      for (const auto& f : n->filhos) visitar(f.get());
      ordem.push_back(n);  // depois dos filhos
    };
    visitar(no_.get());
    for (No* n : ordem) n->grad = 0;
    no_->grad = 1;  // dL/dL
    for (auto it = ordem.rbegin(); it != ordem.rend(); ++it) (*it)->volta();
    std::printf("ordem da volta:");
    for (auto it = ordem.rbegin(); it != ordem.rend(); ++it) {
      if (!(*it)->op.empty()) std::printf(" %s", (*it)->op.c_str());
    }
    std::printf("   (%zu nós)\n", ordem.size());
  }

 private:
  static Valor novo(double dado, const char* op, std::initializer_list<Valor> filhos) {
    Valor v(dado);
    v.no_->op = op;
    for (const Valor& f : filhos) v.no_->filhos.push_back(f.no_);
    return v;
  }
  std::shared_ptr<No> no_;
};

// -----------------------------------------------------------------------------------------------

// O neurônio do capítulo: o = tanh(w1 x1 + w2 x2 + b), L = (o - y)². Devolve {L, dL/dw1, dL/dw2,
// dL/db, dL/dx1, dL/dx2} pelo autograd de escalares.
static std::vector<double> neuronio_pelo_autograd(double x1v, double x2v, double w1v, double w2v,
                                                  double bv, double yv) {
  Valor x1 = x1v, x2 = x2v, w1 = w1v, w2 = w2v, b = bv, y = yv;
  Valor n = w1 * x1 + w2 * x2 + b;
  Valor o = n.tanh();
  Valor L = (o - y) * (o - y);
  L.backward();
  return {L.dado(), w1.grad(), w2.grad(), b.grad(), x1.grad(), x2.grad()};
}

int main() {
  tut::capitulo(37, "Backprop à mão: do papel a um autograd seu");
  tut::novo(
      "as derivadas de um neurônio deduzidas no papel, nó por nó; um autograd de escalares\n"
      "inteiro (umas 100 linhas); e a fita da biblioteca dando os mesmos números.");
  tut::texto(
      "Lê-se depois do capítulo 09. Até aqui, backward() fazia a volta por nós. Agora fazemos\n"
      "a volta à mão num neurônio de duas entradas, e depois escrevemos a máquina que a faz.\n"
      "  n = w1 x1 + w2 x2 + b      (a soma ponderada)\n"
      "  o = tanh(n)                (a ativação)\n"
      "  L = (o - y)²               (a perda contra o alvo y)\n"
      "com x1 = 1, x2 = -2, w1 = 0.5, w2 = 0.25, b = 0.5 e y = 1.");

  const double x1 = 1, x2 = -2, w1 = 0.5, w2 = 0.25, b = 0.5, y = 1;

  tut::secao("No papel: a ida");
  const double n = w1 * x1 + w2 * x2 + b;
  const double o = std::tanh(n);
  const double L = (o - y) * (o - y);
  tut::texto(
      "  n = 0.5·1 + 0.25·(-2) + 0.5 = 0.5\n"
      "  o = tanh(0.5) = 0.462117\n"
      "  L = (0.462117 - 1)² = 0.289318");
  tut::linha("n o L", std::vector<double>{n, o, L});

  tut::secao("No papel: a volta, um nó de cada vez");
  tut::texto(
      "A regra da cadeia, do fim para o começo; cada linha usa só a anterior e um número da ida:\n"
      "  dL/do  = 2 (o - y)             = 2 (0.462117 - 1)  = -1.075766\n"
      "  do/dn  = 1 - tanh(n)² = 1 - o² = 1 - 0.213552      =  0.786448\n"
      "  dL/dn  = dL/do · do/dn         = -1.075766 · 0.786448 = -0.846033\n"
      "  n é uma soma: o gradiente chega igual a cada parcela, e cada produto w·x manda\n"
      "  para w o gradiente vezes x (e para x, vezes w):\n"
      "  dL/dw1 = dL/dn · x1 = -0.846033      dL/dx1 = dL/dn · w1 = -0.423017\n"
      "  dL/dw2 = dL/dn · x2 =  1.692067      dL/dx2 = dL/dn · w2 = -0.211508\n"
      "  dL/db  = dL/dn      = -0.846033");
  const double dL_do = 2 * (o - y);
  const double do_dn = 1 - o * o;
  const double dL_dn = dL_do * do_dn;
  tut::linha("dL/do do/dn dL/dn", std::vector<double>{dL_do, do_dn, dL_dn});
  const std::vector<double> a_mao = {dL_dn * x1, dL_dn * x2, dL_dn, dL_dn * w1, dL_dn * w2};
  tut::linha("à mão: dL/dw1 dL/dw2 dL/db dL/dx1 dL/dx2", a_mao);
  tut::texto(
      "Leia os sinais: dL/dw2 > 0, então diminuir w2 diminui L (x2 é negativo: w2 menor deixa\n"
      "n maior, o mais perto de y = 1). Um passo de descida, w <- w - lr · dL/dw, faz isso.");

  tut::secao("O mesmo, pelo autograd de escalares do topo deste arquivo");
  tut::texto(
      "Valor guarda o número, o grad, os filhos e a volta. + manda o grad igual aos dois lados;\n"
      "* manda para cada lado o grad vezes o OUTRO fator; tanh manda (1 - t²) vezes o grad.\n"
      "backward() visita o grafo (filhos antes dos pais) e chama as voltas de trás para frente.\n(A subtração a - b é a + b·(-1): por isso a ordem abaixo só tem +, * e tanh.)");
  const std::vector<double> micro = neuronio_pelo_autograd(x1, x2, w1, w2, b, y);
  tut::linha("L pelo autograd", std::vector<double>{micro[0]});
  tut::linha("autograd: dL/dw1 dL/dw2 dL/db dL/dx1 dL/dx2",
             std::vector<double>(micro.begin() + 1, micro.end()));
  tut::texto(
      "Por que todas as voltas SOMAM (+=) no grad do filho? Porque um nó pode ser usado mais\n"
      "de uma vez: aqui o vem duas vezes em (o - y)·(o - y), e as duas parcelas se somam\n"
      "(capítulo 04). A conta do capítulo 03, L = (x y + x)², com x = 2 e y = 3:");
  {
    Valor xv = 2, yv = 3;
    Valor bv = xv * yv + xv;
    Valor Lv = bv * bv;
    Lv.backward();
    tut::linha("capítulo 03 pelo autograd: L grad x grad y",
               std::vector<double>{Lv.dado(), xv.grad(), yv.grad()});
  }

  tut::secao("E pela fita da biblioteca");
  Tensor xt = Tensor::from_vector({Scalar(x1), Scalar(x2)}, {2}, true);
  Tensor wt = Tensor::from_vector({Scalar(w1), Scalar(w2)}, {2}, true);
  Tensor bt = Tensor::scalar(Scalar(b), true);
  Tensor ot = tanh(sum(wt * xt) + bt);
  Tensor Lt = pow(ot - Scalar(y), 2);
  Lt.backward();
  const std::vector<double> fita = {wt.grad()(0), wt.grad()(1), bt.grad()(), xt.grad()(0),
                                    xt.grad()(1)};
  tut::linha("fita: dL/dw1 dL/dw2 dL/db dL/dx1 dL/dx2", fita);
  double dif_micro = 0, dif_fita = 0;
  for (std::size_t i = 0; i < a_mao.size(); ++i) {
    dif_micro = std::max(dif_micro, std::fabs(micro[i + 1] - a_mao[i]));
    dif_fita = std::max(dif_fita, std::fabs(fita[i] - a_mao[i]));
  }
  std::printf("diferença máxima, autograd de escalares contra o papel: %.1e\n", dif_micro);
  std::printf("diferença máxima, fita (float) contra o papel: %.1e\n", dif_fita);
  tut::texto(
      "O autograd de escalares conta em double e dá os mesmos dígitos do papel; a fita conta\n"
      "em float (7 dígitos): a diferença fica perto de 1e-7. A fita da biblioteca é esta mesma\n"
      "ideia, com um tensor inteiro em cada nó: a volta de matmul (capítulo 06) é a de * para\n"
      "muitos produtos de uma vez.");

  tut::experimente({
      "troque x2 = -2 por x2 = 0: que gradientes zeram, e por quê?",
      "troque o += das voltas por = (g_acumular = false) e refaça a conta do capítulo 03;",
      "troque b = 0.5 por b = 4: o tanh satura (o perto de 1). O que acontece com os gradientes?",
  });
  tut::respostas();
  {
    const std::vector<double> r1 = neuronio_pelo_autograd(x1, 0, w1, w2, b, y);
    tut::linha("1) com x2 = 0: dL/dw1 dL/dw2 dL/db dL/dx1 dL/dx2",
               std::vector<double>(r1.begin() + 1, r1.end()));
    std::printf(
        "   (dL/dw2 = dL/dn · x2 = 0: um peso cuja entrada é zero não aprende neste exemplo;\n"
        "    n passa a 1, o sobe e os outros gradientes encolhem)\n");
    g_acumular = false;
    Valor xv = 2, yv = 3;
    Valor bv = xv * yv + xv;
    Valor Lv = bv * bv;
    Lv.backward();
    g_acumular = true;
    tut::linha("2) com = no lugar de +=: grad x grad y", std::vector<double>{xv.grad(), yv.grad()});
    std::printf(
        "   (e não 64 e 32: b * b manda duas parcelas de 8 para b e a segunda apaga a primeira;\n"
        "    x recebe 8 pela soma e depois 3 · 8 = 24 pelo produto, que apaga os 8)\n");
    const std::vector<double> r3 = neuronio_pelo_autograd(x1, x2, w1, w2, 4, y);
    tut::linha("3) com b = 4: dL/dw1 dL/dw2 dL/db dL/dx1 dL/dx2",
               std::vector<double>(r3.begin() + 1, r3.end()), 8);
    std::printf(
        "   (n = 4, o = 0.999329, 1 - o² = 0.001341: o tanh saturado quase não deixa o\n"
        "    gradiente passar; um neurônio assim aprende devagar — é isto que se vigia no treino)\n");
  }
  return 0;
}
