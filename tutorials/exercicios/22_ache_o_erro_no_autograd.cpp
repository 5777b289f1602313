// Exercício 22 — Ache o erro no autograd de escalares (parte 1: capítulo 37).
//
// Abaixo, um autograd de escalares como o do capítulo 37, só com + e *. Ele acerta as derivadas
// de w x + b, mas erra as do capítulo 03, L = (x y + x)² em x = 2, y = 3 (deveriam dar 64 e 32,
// conte à mão). Rode, compare com o papel, ache o erro e conserte. Preveja antes de rodar:
// quanto dá dL/dx de L = x + x? E de L = x · x em x = 3? Há um conserto que PARECE certo (passa
// no caso do capítulo 03) e ainda erra um dos outros.
#include <functional>
#include <memory>
#include <set>

#include "exercicios/conferir.hpp"

struct No {
  double dado = 0, grad = 0;
  std::vector<std::shared_ptr<No>> filhos;
  std::function<void()> volta = [] {};
};
using Valor = std::shared_ptr<No>;

static Valor folha(double dado) {
  Valor v = std::make_shared<No>();
  v->dado = dado;
  return v;
}

// --- a sua parte ---
// TODO: ache o erro em soma, produto ou backward. (Uma solução: exercicios/solucoes/22_ache_o_erro_no_autograd.cpp.)
static Valor soma(const Valor& a, const Valor& b) {
  Valor s = folha(a->dado + b->dado);
  s->filhos = {a, b};
  No *pa = a.get(), *pb = b.get(), *ps = s.get();
  s->volta = [=] {
    pa->grad = ps->grad;
    pb->grad = ps->grad;
  };
  return s;
}

static Valor produto(const Valor& a, const Valor& b) {
  Valor p = folha(a->dado * b->dado);
  p->filhos = {a, b};
  No *pa = a.get(), *pb = b.get(), *pp = p.get();
  p->volta = [=] {
    pa->grad = pb->dado * pp->grad;
    pb->grad = pa->dado * pp->grad;
  };
  return p;
}

static void backward(const Valor& L) {
  std::vector<No*> ordem;
  std::set<No*> visto;
  std::function<void(No*)> visitar = [&](No* n) {
    if (!visto.insert(n).second) return;
    for (const auto& f : n->filhos) visitar(f.get());
    ordem.push_back(n);
  };
  visitar(L.get());
  for (No* n : ordem) n->grad = 0;
  L->grad = 1;
  for (auto it = ordem.rbegin(); it != ordem.rend(); ++it) (*it)->volta();
}
// --- fim ---

int main() {
  exercicio::titulo(22, "Ache o erro no autograd de escalares");
  bool certo = true;
  {  // w x + b em w = 3, x = -2, b = 1: dL/dw = x = -2, dL/dx = w = 3, dL/db = 1.
    Valor w = folha(3), x = folha(-2), b = folha(1);
    backward(soma(produto(w, x), b));
    certo =
        exercicio::conferir("resposta w x + b", {w->grad, x->grad, b->grad}, {-2, 3, 1}) && certo;
  }
  // Os três casos abaixo: as referências são as contas à mão do enunciado (e do capítulo 03).
  {
    Valor x = folha(2), y = folha(3);
    Valor b = soma(produto(x, y), x);
    backward(produto(b, b));
    certo = exercicio::conferir("resposta", {x->grad, y->grad}, {64, 32}) && certo;
  }
  {
    Valor x = folha(5);
    backward(soma(x, x));
    certo = exercicio::conferir("resposta x + x", {x->grad}, {2}) && certo;
  }
  {
    Valor x = folha(3);
    backward(produto(x, x));
    certo = exercicio::conferir("resposta x · x", {x->grad}, {6}) && certo;
  }
  return exercicio::resultado(certo);
}
