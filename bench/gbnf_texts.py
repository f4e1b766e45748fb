"""Texts for the GBNF grammars of llama.cpp's `grammars/` folder, written for bench/grammar_bench.py
(the grammars themselves are not in this repository: pass their folder with --gbnf).

Each list holds texts the grammar of that file name should accept; the bench also derives
invalid ones by editing them, and lark (on the grammar read into Lark text by `pse.gbnf`)
labels every text, so a text written wrongly here is counted as what it is.
"""

from __future__ import annotations

TEXTS: dict[str, list[str]] = {
    "arithmetic.gbnf": [
        "1+2=3\n",
        "x*(y+2)=10\n",
        "rate_1/4 =q\nab-c=(d)\n",
        "( a *b ) -c /2 = total\n(1)=( 2 )\n",
        "a+b+c+d+e+f+g=h\nx=y\n",
    ],
    "c.gbnf": [
        "int main(){return 0;}",
        "int add(int a){int b = a+1;return b*2;}",
        "float f(){x = g(1, y);}char h(){}",
        "int loop(int n){for(i = 0; i<n; i = i+1){n = n-1;}while(n>0){n = n/2;}return n;}",
        "int m(){if(a==b){return 1;}else{return -x;}// done\n/* a * b */return (a);}",
    ],
    "chess.gbnf": [
        "1. e4 e5\n2. Nf3 Nc6\n",
        "1. d4 d5\n2. c4 dxc4\n3. e4 O-O\n",
        "1. e4 c5\n2. Nf3 d6\n3. d4 cxd4\n4. Nxd4 Nf6\n5. Nc3 a6\n",
        "1. e4 e5\n2. Qh5 Nc6\n3. Bc4 Nf6\n4. Qxf7# Ke7\n",
        "1. a4 h5\n12. a8=Q+ O-O-O\n",
    ],
    "english.gbnf": [
        "Hello, world!",
        "The quick brown fox jumps over the lazy dog.",
        "It's 42 degrees (Celsius) in Paris today; bring water.\nSee you at 5:30pm!",
        "A list: apples, pears & plums -- and #hashtags @mentions [1] {2} <3>",
    ],
    "japanese.gbnf": [
        "こんにちは 世界",
        "カタカナ、テスト。",
        "私は 東京に 住んでいます。\n毎日 日本語を 勉強します。",
        "ありがとう ございます",
    ],
    "json.gbnf": [
        '{"a": 1, "b": [true, null, "x"]}',
        "{}",
        '{"name": "Ada", "tags": ["math", "code"], "born": 1815, "ratio": -0.5e3}',
        '{"nested": {"deep": {"deeper": [1, 2, {"k": "v\\n\\u00e9"}]}}}',
        '{\n  "a": "b",\n  "c": [\n    1\n  ]\n}',
    ],
    "json_arr.gbnf": [
        "[\n]",
        '[\n{"a": 1},\n2]',
        '[\n"x",\n{"b": [true, false]},\n-1.5,\nnull]',
        '[\n{"id": 1, "name": "a"},\n{"id": 2, "name": "b"},\n{"id": 3, "name": "c"}]',
    ],
    "list.gbnf": [
        "- milk\n",
        "- milk\n- eggs\n- bread (whole grain)\n",
        "- first item: done\n- second item, with a comma\n- третий пункт\n- 四番目\n",
    ],
}
