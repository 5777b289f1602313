#!/usr/bin/env python3
"""Draws the concept pages' diagrams as SVG files next to this script (docs/img/).

Run it again after changing a figure: python3 docs/img/figuras.py
Plain Python, no packages: each figure is a function that returns the SVG text. The labels are
symbols and short words shared by the Portuguese and English pages.
"""
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
INK, SOFT, BLUE, ORANGE, GREEN, GREY = "#222", "#666", "#2b6cb0", "#dd6b20", "#2f855a", "#cbd5e0"


def svg(width, height, body):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" {FONT} font-size="14">\n'
            '<defs><marker id="seta" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{INK}"/></marker></defs>\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")


def box(x, y, w, h, label, color=BLUE, sub=None):
    out = [f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="white" stroke="{color}" stroke-width="2"/>',
           f'<text x="{x + w / 2}" y="{y + h / 2 + (0 if sub else 5)}" text-anchor="middle" fill="{INK}">{label}</text>']
    if sub:
        out.append(f'<text x="{x + w / 2}" y="{y + h / 2 + 18}" text-anchor="middle" fill="{SOFT}" '
                   f'font-size="11">{sub}</text>')
    return out


def arrow(x1, y1, x2, y2, color=INK):
    return [f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{color}" stroke-width="1.6" '
            'marker-end="url(#seta)"/>']


def text(x, y, s, anchor="middle", color=INK, size=14):
    return [f'<text x="{x}" y="{y}" text-anchor="{anchor}" fill="{color}" font-size="{size}">{s}</text>']


def atencao_passos():
    """The nine steps of nn/attention.cpp, one box each."""
    steps = [("X", "(B, n, d)"), ("Q K V", "Linear"), ("RoPE", "Q, K"), ("cache", "K, V"),
             ("GQA", "repeat_kv"), ("Q Kᵀ/√d", "(H, n, m)"), ("máscara", "j &gt; start+i"),
             ("softmax", "linhas"), ("· V", "(H, n, d_h)"), ("W_O", "(B, n, d)")]
    body, x = [], 10
    for i, (label, sub) in enumerate(steps):
        body += box(x, 30, 84, 56, label, ORANGE if label in ("Q Kᵀ/√d", "softmax", "· V") else BLUE, sub)
        if i:
            body += text(x + 42, 22, str(i), size=11, color=SOFT)
        if i + 1 < len(steps):
            body += arrow(x + 84, 58, x + 98, 58)
        x += 98
    return svg(x, 100, body)


def mascara_causal(n=6):
    """The causal mask of n positions: allowed (j <= i) filled, forbidden (j > i) grey with -inf."""
    c, x0, y0 = 40, 70, 50
    body = text(x0 + n * c / 2, 20, "j (chave / key)") + [
        f'<text x="20" y="{y0 + n * c / 2}" text-anchor="middle" fill="{INK}" '
        f'transform="rotate(-90 20 {y0 + n * c / 2})">i (consulta / query)</text>']
    for i in range(n):
        body += text(x0 - 12, y0 + i * c + c / 2 + 5, str(i), color=SOFT)
        body += text(x0 + i * c + c / 2, y0 - 8, str(i), color=SOFT)
        for j in range(n):
            allowed = j <= i
            body.append(f'<rect x="{x0 + j * c}" y="{y0 + i * c}" width="{c}" height="{c}" '
                        f'fill="{"#bee3f8" if allowed else GREY}" stroke="white" stroke-width="2"/>')
            if not allowed:
                body += text(x0 + j * c + c / 2, y0 + i * c + c / 2 + 5, "−∞", color=SOFT, size=12)
    return svg(x0 + n * c + 20, y0 + n * c + 20, body)


def rope_pares():
    """RoPE turns each pair (x[2i], x[2i+1]) by p·θ_i: a fast pair and a slow pair, positions 0..4."""
    body = []
    for k, (theta, title) in enumerate([(1.0, "par 0: θ = 1"), (0.25, "par i: θ = base^(−2i/D)")]):
        cx, cy, r = 120 + k * 260, 140, 90
        body.append(f'<circle cx="{cx}" cy="{cy}" r="{r}" fill="none" stroke="{GREY}" stroke-width="2"/>')
        body += text(cx, 30, title)
        for p in range(5):
            a = p * theta
            x, y = cx + r * math.cos(a), cy - r * math.sin(a)
            body += arrow(cx, cy, round(x, 1), round(y, 1), ORANGE if p else BLUE)
            body += text(round(cx + (r + 16) * math.cos(a), 1), round(cy - (r + 16) * math.sin(a) + 5, 1),
                         f"p={p}", size=11, color=SOFT)
    body += text(250, 262, "q·k depende só de p_q − p_k", color=INK)
    return svg(500, 280, body)


def gqa():
    """Grouped-query attention: 4 query heads share 2 K/V heads (head h uses K/V head h // 2)."""
    body = []
    for h in range(4):
        body += box(20 + h * 110, 20, 90, 44, f"Q{h}")
    for g in range(2):
        body += box(75 + g * 220, 150, 90, 44, f"K{g} V{g}", GREEN)
    for h in range(4):
        g = h // 2
        body += arrow(65 + h * 110, 64, 120 + g * 220, 148, SOFT)
    body += text(240, 230, "cabeça h usa K/V h / 2   (n_rep = 4 / 2 = 2)", color=SOFT, size=12)
    return svg(470, 245, body)


def residuos():
    """The residual stream: each sub-layer reads a normalised copy and adds its result back."""
    body = [f'<line x1="80" y1="20" x2="80" y2="380" stroke="{BLUE}" stroke-width="6"/>']
    body += text(80, 16, "x") + text(130, 396, "x depois da última camada", anchor="start", size=12)
    for y, name in [(60, "atenção"), (150, "SwiGLU"), (240, "atenção")]:
        body += arrow(80, y, 140, y)
        body += box(140, y - 18, 90, 36, "RMSNorm", GREEN)
        body += arrow(230, y, 260, y)
        body += box(260, y - 18, 90, 36, name, ORANGE)
        body.append(f'<path d="M305,{y + 18} L305,{y + 50} L92,{y + 50}" fill="none" stroke="{INK}" '
                    'stroke-width="1.6" marker-end="url(#seta)"/>')
        body.append(f'<circle cx="80" cy="{y + 50}" r="11" fill="white" stroke="{INK}" stroke-width="1.6"/>')
        body += text(80, y + 55, "+")
    body += text(200, 345, "⋮   n_layers × (atenção, SwiGLU)", color=SOFT, size=12)
    body += arrow(80, 382, 80, 418)
    body += box(20, 420, 120, 36, "RMSNorm final", GREEN)
    body += arrow(80, 456, 80, 474)
    body += box(20, 476, 120, 36, "W_out (saída)", ORANGE)
    body += arrow(80, 512, 80, 530)
    body += text(80, 546, "logits (V por posição)")
    return svg(380, 560, body)


def kv_cache():
    """Generation with a K/V cache: the new position computes its q, k, v once; k and v join the cache.
    The keys sit next to q5, whose arrows end on them (q5 · k_p are the scores; the values are
    what the softmax weights average)."""
    body, c = [], 46
    for p in range(6):
        new = p == 5
        color = ORANGE if new else GREEN
        body += box(20 + p * (c + 8), 40, c, 40, f"v{p}", color)
        body += box(20 + p * (c + 8), 90, c, 40, f"k{p}", color)
        body += text(20 + p * (c + 8) + c / 2, 30, str(p), color=SOFT, size=11)
    body += box(20 + 5 * (c + 8), 170, c, 40, "q5", ORANGE)
    for p in range(6):
        body += arrow(20 + 5 * (c + 8) + c / 2, 170, 20 + p * (c + 8) + c / 2, 133, SOFT)
    body += text(140, 235, "cache: posições 0..4, calculadas uma vez", color=GREEN, size=12)
    body += text(140, 252, "novo: só a posição 5 (start = 5)", color=ORANGE, size=12)
    return svg(350, 265, body)


SAIDA_40 = os.path.join(HERE, "..", "..", "tutorials", "saidas", "39_vendo_a_rede_treinar.txt")


def series_do_capitulo_40():
    """The series chapter 39 printed ("boa, perda: 4.431 3.093 ..."), from its saved output."""
    series = {}
    with open(SAIDA_40, encoding="utf-8") as f:
        for line in f:
            rotulo, sep, numeros = line.strip().removeprefix("~ ").partition(": ")
            if sep and rotulo.split(", ")[0] in ("boa", "lr 10x", "init 10x"):
                try:
                    series[rotulo] = (line.strip(), [float(x) for x in numeros.split()])
                except ValueError:
                    pass
    return series


def vendo_a_rede_treinar():
    """Chapter 39's three runs: loss, log10 of the residual stream's RMS after the last layer and
    log10 of the update/weight ratio, at steps 0, 20, ..., 100 and 119, drawn from the chapter's
    saved output. The <desc> holds the lines plotted, so a test can check them against the file."""
    series = series_do_capitulo_40()
    passos = [0, 20, 40, 60, 80, 100, 119]
    rodadas = [("boa", GREEN), ("lr 10x", ORANGE), ("init 10x", BLUE)]
    paineis = [("perda", "perda", lambda v: v),
               ("log10 rms depois da camada 1", "rms depois da camada 1", math.log10),
               ("log10 atualização/peso", "log10 atualização/peso, mediana das matrizes", lambda v: v)]
    w, h, x0, y0, gap = 230, 170, 50, 40, 60
    body, usadas = [], []
    for k, (titulo, medida, f) in enumerate(paineis):
        left = x0 + k * (w + gap)
        valores = [f(v) for nome, _ in rodadas for v in series[nome + ", " + medida][1]]
        lo, hi = min(valores), max(valores)
        lo, hi = lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)
        sx = lambda p: left + p / 119 * w
        sy = lambda v: y0 + h - (v - lo) / (hi - lo) * h
        body.append(f'<rect x="{left}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="{GREY}"/>')
        body += text(left + w / 2, y0 - 12, titulo, size=13)
        for v in (lo + 0.05 * (hi - lo) / 1.1, (lo + hi) / 2, hi - 0.05 * (hi - lo) / 1.1):
            body += text(left - 6, sy(v) + 4, f"{v:.1f}", anchor="end", color=SOFT, size=10)
        for p in (0, 60, 119):
            body += text(sx(p), y0 + h + 14, str(p), color=SOFT, size=10)
        for nome, cor in rodadas:
            linha, vals = series[nome + ", " + medida]
            usadas.append(linha)
            pts = " ".join(f"{sx(p):.1f},{sy(f(v)):.1f}" for p, v in zip(passos, vals))
            body.append(f'<polyline points="{pts}" fill="none" stroke="{cor}" stroke-width="2"/>')
    for i, (nome, cor) in enumerate(rodadas):
        body += text(x0 + 120 + i * 150, y0 + h + 40, nome, color=cor, size=13)
    body += text(x0 + 1.5 * w + gap, y0 + h + 58, "passo (capítulo 39, tutorials/saidas/39_vendo_a_rede_treinar.txt)",
                 color=SOFT, size=11)
    return svg(3 * w + 2 * gap + 70, y0 + h + 70, [descricao("39_vendo_a_rede_treinar", usadas)] + body)


def descricao(capitulo, linhas):
    """The <desc> of a figure drawn from a chapter's saved output: the file's path, then every
    line plotted, as printed (tests/cli/figures_test.cpp checks each against the file)."""
    texto = "\n".join([f"tutorials/saidas/{capitulo}.txt"] + linhas)
    return "<desc>\n" + texto.replace("&", "&amp;").replace("<", "&lt;") + "\n</desc>"


def saida(capitulo):
    """The lines of tutorials/saidas/<capitulo>.txt."""
    with open(os.path.join(HERE, "..", "..", "tutorials", "saidas", capitulo + ".txt"), encoding="utf-8") as f:
        return f.read().split("\n")


def linha(linhas, comeco):
    """The first line that starts with `comeco`."""
    return next(l for l in linhas if l.startswith(comeco))


def numeros(linha_, depois):
    """The numbers of `linha_` after the first `depois`, up to the first word that is not one."""
    out = []
    for palavra in linha_.split(depois, 1)[1].replace(",", " ").split():
        try:
            out.append(float(palavra))
        except ValueError:
            break
    return out


def grafico_de_linhas(capitulo, titulo, rotulo_x, passos, series, casas=1, desde=0):
    """One panel of lines: series = [(legend, saved line, values, colour)], x = passos; the
    points before index `desde` are left out of the plot (not of the <desc>)."""
    linhas_salvas = [l for _, l, _, _ in series]
    passos = passos[desde:]
    series = [(nome, l, vals[desde:], cor) for nome, l, vals, cor in series]
    w, h, x0, y0 = 420, 200, 60, 40
    todos = [v for _, _, vals, _ in series for v in vals]
    lo, hi = min(todos), max(todos)
    lo, hi = lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)
    sx = lambda p: x0 + (p - passos[0]) / (passos[-1] - passos[0]) * w
    sy = lambda v: y0 + h - (v - lo) / (hi - lo) * h
    body = [f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="{GREY}"/>']
    body += text(x0 + w / 2, y0 - 14, titulo, size=13)
    for k in range(5):
        v = lo + (hi - lo) * (0.05 + 0.9 * k / 4) / 1.0
        body += text(x0 - 6, sy(v) + 4, f"{v:.{casas}f}", anchor="end", color=SOFT, size=10)
    for p in passos:
        body += text(sx(p), y0 + h + 14, str(p), color=SOFT, size=10)
    for i, (nome, _, vals, cor) in enumerate(series):
        pts = " ".join(f"{sx(p):.1f},{sy(v):.1f}" for p, v in zip(passos, vals))
        body.append(f'<polyline points="{pts}" fill="none" stroke="{cor}" stroke-width="2"/>')
        body += text(x0 + w + 10, y0 + 16 + 18 * i, nome, anchor="start", color=cor, size=12)
    body += text(x0 + w / 2, y0 + h + 34, rotulo_x, color=SOFT, size=11)
    return svg(x0 + w + 190, y0 + h + 48, [descricao(capitulo, linhas_salvas)] + body)


def bpe_compensa():
    """Chapter 42: validation bits per byte of the same model on characters, BPE 384 and BPE 1024,
    at steps 50, 100, 150 and 200 (the same compute: the same steps and tokens per step); step 0,
    the untrained models, would squeeze the rest of the plot."""
    linhas = saida("42_bpe_compensa")
    series = []
    for nome, cor in (("caracteres", GREEN), ("BPE 384", ORANGE), ("BPE 1024", BLUE)):
        l = linha(linhas, nome + ", bits por byte de validação: ")
        series.append((nome, l, numeros(l, ": "), cor))
    return grafico_de_linhas("42_bpe_compensa", "bits por byte de validação (capítulo 42)",
                             "passo (16 janelas de 32 tokens por passo; o passo 0 fica de fora)",
                             [0, 50, 100, 150, 200], series, casas=2, desde=1)


def gradiente_por_camada():
    """Chapter 39's good run: the gradient norm of each part of the model (before clipping) at
    steps 0, 20, ..., 100 and 119."""
    linhas = saida("39_vendo_a_rede_treinar")
    series = []
    for nome, cor in (("embeddings", GREEN), ("camada 0", ORANGE), ("camada 1", BLUE),
                      ("norma final e saída", INK)):
        l = linha(linhas, "boa, norma do gradiente, " + nome + ": ")
        series.append((nome, l, numeros(l, ": "), cor))
    return grafico_de_linhas("39_vendo_a_rede_treinar", "norma do gradiente por parte, rodada boa (capítulo 39)",
                             "passo", [0, 20, 40, 60, 80, 100, 119], series, casas=2)


def mlp_contra_bigrama():
    """Chapter 38: the validation loss of the count bigram and of the MLP with 1, 3 and 6
    characters of context, one bar each."""
    linhas = saida("38_mlp_de_caracteres")
    barras = [("bigrama", linha(linhas, "bigrama de contagens, perda de validação"), "add-one): ", GREY),
              ("MLP n = 1", linha(linhas, "1) n = 1: perda de validação"), "perda de validação ", ORANGE),
              ("MLP n = 3", linha(linhas, "MLP n = 3, perda de validação: "), ": ", BLUE),
              ("MLP n = 6", linha(linhas, "2) n = 6: perda de treino"), "de validação ", GREEN)]
    x0, y0, h, lo, hi = 60, 40, 200, 1.8, 2.6
    body = [f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + 4 * 110}" y2="{y0 + h}" stroke="{GREY}"/>']
    body += text(x0 + 220, y0 - 14, "perda de validação em nats (capítulo 38; o eixo começa em 1.8)", size=13)
    for i, (nome, l, depois, cor) in enumerate(barras):
        v = numeros(l, depois)[0]
        top = y0 + h - (v - lo) / (hi - lo) * h
        body.append(f'<rect x="{x0 + 20 + i * 110}" y="{top:.1f}" width="70" height="{y0 + h - top:.1f}" '
                    f'fill="{cor}"/>')
        body += text(x0 + 55 + i * 110, top - 6, f"{v:.4f}", size=12)
        body += text(x0 + 55 + i * 110, y0 + h + 16, nome, size=12)
    desc = descricao("38_mlp_de_caracteres", [l for _, l, _, _ in barras])
    return svg(x0 + 4 * 110 + 40, y0 + h + 30, [desc] + body)


FIGURES = {
    "atencao-passos.svg": atencao_passos,
    "mascara-causal.svg": mascara_causal,
    "rope-pares.svg": rope_pares,
    "gqa.svg": gqa,
    "residuos.svg": residuos,
    "kv-cache.svg": kv_cache,
    "vendo-a-rede-treinar.svg": vendo_a_rede_treinar,
    "gradiente-por-camada.svg": gradiente_por_camada,
    "mlp-contra-bigrama.svg": mlp_contra_bigrama,
    "bpe-compensa.svg": bpe_compensa,
}

if __name__ == "__main__":
    for name, draw in FIGURES.items():
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(draw())
        print("wrote docs/img/" + name)
