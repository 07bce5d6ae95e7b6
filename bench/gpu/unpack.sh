# Sourced by the GPU machine's run scripts: unpacks PACK (a tar.xz of pack/{bin,lib,tok}) into
# ROOT, sets p to its pack folder and LD_LIBRARY_PATH to its libraries and CUDA 13's, and makes
# a random checkpoint of SHAPE (default llama31-8b; LAYERS: fewer layers) at MODEL unless it is
# there, with the pack's tokenizer (folder TOK in the pack, default tok).
#   pack=... root=... model=... source bench/gpu/unpack.sh
mkdir -p "$root"
tar -xJf "$pack" -C "$root"
p=$root/pack
cu_lib=$(python3 -c "import nvidia,os;print(os.path.join(nvidia.__path__[0],'cu13','lib'))")
export LD_LIBRARY_PATH=$p/lib:$cu_lib:${LD_LIBRARY_PATH:-}
[ -f "$model/config.json" ] ||
  python3 tools/make_random_checkpoint.py --shape "${SHAPE:-llama31-8b}" --out "$model" \
    --layers "${LAYERS:-0}" >/dev/null
cp "$p/${TOK:-tok}"/tokenizer.json "$p/${TOK:-tok}"/tokenizer_config.json "$model"/
