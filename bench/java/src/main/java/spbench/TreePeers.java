// TreePeers: the Java peers of bench/TreeBench.cs (issue 20, item 5).
//
// The same tree as TreeBench: a complete binary tree of NODES composite nodes
// with parent links, node i holding Key = i * 7, Stamp = i << 20, Weight =
// i * 0.5, Red = i % 3 == 0, Depth = its parent's + 1, allocated in a shuffled
// order (a Fisher-Yates shuffle with java.util.Random and TreeBench's seed; the
// order differs from .NET's Random, the point is the same: neighbours in the
// tree are not neighbours in memory).
//
// For Apache Fory (reference tracking on, the class registered) and Kryo
// (references on, the class registered): warm the JIT up (at least 3 s and 10
// round trips), then REPS timed repetitions of serialize (to a byte[]) and
// restore (from those bytes), the heap collected before each; every restored
// tree is compared with the original before its figures count (exit 1 if not).
//
// Usage: java -jar tree-peers.jar NODES REPS
// Output: TreeBench's CSV rows, `MECHANISM,OPERATION,NODES,REP,NS,BYTES`.
package spbench;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.util.ArrayDeque;
import java.util.Random;
import org.apache.fory.Fory;
import org.apache.fory.config.Language;
import org.apache.fory.logging.LoggerFactory;

public final class TreePeers {
	public static final class TreeNode {
		public int key;
		public long stamp;
		public double weight;
		public boolean red;
		public short depth;
		public TreeNode left, right, parent;
	}

	static TreeNode build (int n) {
		TreeNode[] nodes = new TreeNode [n];
		int[] order = new int [n];
		for (int i = 0; i < n; i++)
			order [i] = i;
		Random rng = new Random (20261122);
		for (int i = n - 1; i > 0; i--) {
			int j = rng.nextInt (i + 1);
			int t = order [i]; order [i] = order [j]; order [j] = t;
		}
		for (int i : order)
			nodes [i] = new TreeNode ();
		for (int i = 0; i < n; i++) {
			TreeNode t = nodes [i];
			t.key = i * 7; t.stamp = (long)i << 20; t.weight = i * 0.5; t.red = i % 3 == 0;
			if (i > 0) {
				t.parent = nodes [(i - 1) / 2];
				t.depth = (short)(t.parent.depth + 1);
				if (i % 2 == 1) t.parent.left = t; else t.parent.right = t;
			}
		}
		return nodes [0];
	}

	/* Same shape, values and parent links, breadth first; n nodes exactly. */
	static boolean same (TreeNode a, TreeNode b, int n) {
		ArrayDeque<TreeNode[]> q = new ArrayDeque<> ();
		q.add (new TreeNode[] { a, b });
		int seen = 0;
		while (!q.isEmpty ()) {
			TreeNode[] p = q.poll ();
			TreeNode x = p [0], y = p [1];
			if ((x == null) != (y == null))
				return false;
			if (x == null)
				continue;
			seen++;
			if (x.key != y.key || x.stamp != y.stamp || x.weight != y.weight || x.red != y.red || x.depth != y.depth)
				return false;
			if ((x.parent == null) != (y.parent == null) || (x.parent != null && x.parent.key != y.parent.key))
				return false;
			if (x.left != null && y.left != null && y.left.parent != y) return false;
			if (x.right != null && y.right != null && y.right.parent != y) return false;
			q.add (new TreeNode[] { x.left, y.left });
			q.add (new TreeNode[] { x.right, y.right });
		}
		return seen == n;
	}

	interface Peer {
		String name ();
		byte[] serialize (TreeNode root);
		TreeNode restore (byte[] bytes);
	}

	static final class ForyPeer implements Peer {
		final Fory fory = Fory.builder ().withLanguage (Language.JAVA).withRefTracking (true)
			.requireClassRegistration (true).build ();
		ForyPeer () { fory.register (TreeNode.class); }
		public String name () { return "Fory"; }
		public byte[] serialize (TreeNode root) { return fory.serialize (root); }
		public TreeNode restore (byte[] bytes) { return (TreeNode)fory.deserialize (bytes); }
	}

	static final class KryoPeer implements Peer {
		final Kryo kryo = new Kryo ();
		final Output out = new Output (1 << 20, -1);
		KryoPeer () { kryo.setReferences (true); kryo.register (TreeNode.class); }
		public String name () { return "Kryo"; }
		public byte[] serialize (TreeNode root) { out.reset (); kryo.writeObject (out, root); return out.toBytes (); }
		public TreeNode restore (byte[] bytes) { return kryo.readObject (new Input (bytes), TreeNode.class); }
	}

	static void settle () {
		System.gc ();
		System.gc ();
	}

	static void measure (Peer p, TreeNode root, int n, int reps) {
		long warmEnd = System.nanoTime () + 3_000_000_000L;
		for (int i = 0; i < 10 || System.nanoTime () < warmEnd; i++)
			if (!same (root, p.restore (p.serialize (root)), n))
				fail (p.name () + ": the warm-up's restored tree differs");
		for (int r = 1; r <= reps; r++) {
			settle ();
			long t0 = System.nanoTime ();
			byte[] bytes = p.serialize (root);
			long t1 = System.nanoTime ();
			settle ();
			long t2 = System.nanoTime ();
			TreeNode back = p.restore (bytes);
			long t3 = System.nanoTime ();
			if (!same (root, back, n))
				fail (p.name () + ": the restored tree differs");
			System.out.println (p.name () + ",serialize," + n + "," + r + "," + (t1 - t0) + "," + bytes.length);
			System.out.println (p.name () + ",restore," + n + "," + r + "," + (t3 - t2) + "," + bytes.length);
		}
	}

	static void fail (String why) {
		System.err.println ("TreePeers: " + why);
		System.exit (1);
	}

	public static void main (String[] args) throws Exception {
		if (args.length != 2)
			fail ("usage: java -jar tree-peers.jar NODES REPS");
		int n = Integer.parseInt (args [0]), reps = Integer.parseInt (args [1]);
		LoggerFactory.disableLogging ();   /* Fory logs its code generation on stdout, where the rows go */
		// Both libraries recurse per reference: a deep stack, whatever the tree.
		Thread t = new Thread (null, () -> {
			TreeNode root = build (n);
			measure (new ForyPeer (), root, n, reps);
			measure (new KryoPeer (), root, n, reps);
		}, "tree-peers", 1L << 30);
		t.start ();
		t.join ();
	}
}
